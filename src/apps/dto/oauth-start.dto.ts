import { TextField } from '../../http/input-fields';

/** `GET /v1/apps/{slug}/oauth/start`: the name the connected account will have. */
export class OAuthStartDto {
  @TextField({ required: true })
  name!: string;
}

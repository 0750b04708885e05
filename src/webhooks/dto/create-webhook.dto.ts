import { TextField } from '../../http/input-fields';
import { IsHttpUrl } from '../../http/input-formats';

/** `POST /v1/webhooks`: `url` and `name` are required, `description` defaults to `""`. */
export class CreateWebhookDto {
  @IsHttpUrl()
  @TextField({ required: true })
  url!: string;

  @TextField({ required: true })
  name!: string;

  @TextField()
  description = '';
}

import { JsonObjectField, TextField } from '../../http/input-fields';

/** `POST /v1/accounts`: an account of `app` from `credentials` (checked against the app's fields by the engine). */
export class ConnectAccountDto {
  @TextField({ required: true })
  app!: string;

  @TextField({ required: true })
  name!: string;

  @JsonObjectField()
  credentials?: Record<string, unknown>;
}

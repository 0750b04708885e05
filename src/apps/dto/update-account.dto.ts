import { JsonObjectField, TextField } from '../../http/input-fields';

/** `PUT /v1/accounts/{id}`: new `credentials` (required, checked against the app's fields) and optionally a new `name`. */
export class UpdateAccountDto {
  @TextField()
  name?: string;

  @JsonObjectField()
  credentials?: Record<string, unknown>;
}

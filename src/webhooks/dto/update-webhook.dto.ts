import { BooleanField, TextField } from '../../http/input-fields';
import { IsHttpUrl } from '../../http/input-formats';

/** `PUT /v1/webhooks/{id}`: at least one of `url`, `name`, `description`, `active`. */
export class UpdateWebhookDto {
  @IsHttpUrl()
  @TextField({
    required: { unlessAnyOf: ['name', 'description', 'active'], message: 'or name, description, active: give at least one to change' },
  })
  url?: string;

  @TextField()
  name?: string;

  @TextField()
  description?: string;

  @BooleanField()
  active?: boolean;
}

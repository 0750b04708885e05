import { Expose } from 'class-transformer';
import { IsArray, IsOptional } from 'class-validator';
import { JsonObjectField, TextField } from '../../http/input-fields';

/**
 * `POST /v1/apps`: an operator's own app. The shape of `fields` entries and of `oauth` is checked
 * by the engine (`checkAppRegistration`), which names the nested field at fault.
 */
export class RegisterAppDto {
  @TextField({ required: true })
  name_slug!: string;

  @TextField({ required: true })
  name!: string;

  @TextField({ required: true })
  auth_type!: string;

  @Expose()
  @IsOptional()
  @IsArray({ message: 'must be an array of {name, label, secret}' })
  fields?: unknown[];

  @JsonObjectField()
  oauth?: Record<string, unknown>;
}

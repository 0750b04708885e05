import { BooleanField, TextField } from '../../http/input-fields';

/**
 * `POST /v1/components`: the code itself or a URL to fetch it from (the code wins when both are
 * given); `publish` puts it in the account's registry.
 */
export class CreateComponentDto {
  @TextField({ required: { unlessAnyOf: ['component_url'], message: 'or component_url is required' } })
  component_code?: string;

  @TextField()
  component_url?: string;

  @BooleanField()
  publish = false;
}

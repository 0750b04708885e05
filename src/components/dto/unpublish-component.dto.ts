import { TextField } from '../../http/input-fields';

/** `DELETE /v1/components/registry/{key}?version=`: without a version, every version of the key. */
export class UnpublishComponentDto {
  @TextField()
  version?: string;
}

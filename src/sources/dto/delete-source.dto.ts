import { BooleanField } from '../../http/input-fields';

/** `DELETE /v1/sources/{id}`: `ignore_hook_errors` deletes even when the `deactivate` hook fails. */
export class DeleteSourceDto {
  @BooleanField()
  ignore_hook_errors = false;
}

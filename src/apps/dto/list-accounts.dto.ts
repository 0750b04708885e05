import { TextField } from '../../http/input-fields';

/** `GET /v1/users/me/accounts`: optionally only one app's accounts. */
export class ListAccountsDto {
  @TextField()
  app?: string;
}

import { TextField } from '../../http/input-fields';

/** `GET /v1/apps/{slug}/oauth/start`: the new account's `name`, or the `account` (`apn_...`) to reconnect. */
export class OAuthStartDto {
  @TextField({ required: { unlessAnyOf: ['account'], message: 'is required (or account, to reconnect one)' } })
  name?: string;

  @TextField()
  account?: string;
}

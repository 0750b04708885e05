import { MaxLength } from 'class-validator';
import { TextField } from '../../http/input-fields';

/** Longest authorization code accepted (providers' codes are far shorter). */
const MAX_CODE_CHARS = 2048;

/** `GET /v1/oauth/callback`: what the provider redirects back with (`code` and `state`, or `error`). */
export class OAuthCallbackDto {
  @MaxLength(MAX_CODE_CHARS, { message: `must be at most ${MAX_CODE_CHARS} characters` })
  @TextField()
  code?: string;

  @TextField()
  state?: string;

  @TextField()
  error?: string;
}

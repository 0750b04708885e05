import { TextField } from '../../http/input-fields';

/** `GET /v1/components/search`: `query` matched against keys, names and descriptions; empty lists all. */
export class SearchComponentsDto {
  @TextField()
  query = '';
}

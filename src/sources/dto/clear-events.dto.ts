import { Matches } from 'class-validator';
import { TextField } from '../../http/input-fields';

const SUMMARY_ID = /^\d+-\d+$/;
const SUMMARY_ID_MESSAGE = 'must be an event summary id like 1700000000000-0';

/** `DELETE /v1/sources/{id}/events`: an optional range of event summary ids, inclusive. */
export class ClearEventsDto {
  @Matches(SUMMARY_ID, { message: SUMMARY_ID_MESSAGE })
  @TextField()
  start_id?: string;

  @Matches(SUMMARY_ID, { message: SUMMARY_ID_MESSAGE })
  @TextField()
  end_id?: string;
}

import { ValidateBy } from 'class-validator';
import { TextField } from '../../http/input-fields';

/**
 * A `since` parameter as epoch milliseconds: up to 10 digits are epoch seconds, more are epoch
 * milliseconds, anything else an ISO date. NaN when it is none of them.
 */
export function sinceToEpochMs(since: string): number {
  if (/^\d+$/.test(since)) return Number(since) * (since.length <= 10 ? 1000 : 1);
  return Date.parse(since);
}

/** `POST /v1/webhooks/{id}/recover`: retry the failed deliveries created since `since`. */
export class RecoverDeliveriesDto {
  @ValidateBy({
    name: 'isSinceTime',
    validator: {
      validate: (value) => typeof value === 'string' && Number.isFinite(sinceToEpochMs(value)),
      defaultMessage: () => 'must be epoch seconds, epoch milliseconds or an ISO date',
    },
  })
  @TextField({ required: true })
  since!: string;
}

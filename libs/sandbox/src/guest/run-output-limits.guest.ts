import { jsonStringify } from './guest-intrinsics.guest';

/**
 * Caps on what one invocation may produce. The guest runtime enforces them at the call (the call
 * throws a RangeError with one of the messages below), and the worker enforces them again on the
 * result, because a component can tamper with the runtime inside its own isolate.
 */
export interface RunOutputLimits {
  /** `$emit` calls kept per run. */
  maxEmits: number;
  /** UTF-8 bytes of one emitted event as JSON. */
  maxEmitBytes: number;
  /** UTF-8 bytes of all events of one run as JSON. */
  maxRunEmitBytes: number;
  /** UTF-8 bytes written by the `db.set` calls of one run (key plus value as JSON, every call counts). */
  maxDbWriteBytesPerRun: number;
  /** UTF-8 bytes a source's db may hold (key plus value as JSON per key); only growth past it is refused. */
  maxDbBytesPerSource: number;
  /** Characters of a db key. */
  maxDbKeyChars: number;
  /** Characters of an emit's `meta.id` (as a string). */
  maxEmitIdChars: number;
  /** Characters of an emit's `meta.name` (its channel). */
  maxEmitNameChars: number;
  /** Characters of an emit's `meta.summary`. */
  maxEmitSummaryChars: number;
}

/**
 * UTF-8 bytes of all `$.export` values of one action run (as JSON). Like the return value, the
 * exports are read by later steps and kept in the run's record, so they get the same bound.
 */
export const MAX_EXPORT_BYTES = 1024 * 1024;

/** The limits when the server configures none. */
export const DEFAULT_RUN_OUTPUT_LIMITS: Readonly<RunOutputLimits> = Object.freeze({
  maxEmits: 1000,
  maxEmitBytes: 1024 * 1024,
  maxRunEmitBytes: 16 * 1024 * 1024,
  maxDbWriteBytesPerRun: 1024 * 1024,
  maxDbBytesPerSource: 8 * 1024 * 1024,
  maxDbKeyChars: 256,
  maxEmitIdChars: 256,
  maxEmitNameChars: 128,
  maxEmitSummaryChars: 1024,
});

function quoted(key: string): string {
  return jsonStringify(key.length > 64 ? `${key.slice(0, 64)}...` : key);
}

/** The messages of a refused call; the same text whether the guest or the worker refuses. */
export const outputLimitMessages = {
  emitCount: (max: number) =>
    `this.$emit: a run may emit at most ${max} events (SLUICE_MAX_EMITS_PER_RUN=${max}); this event and any later ones are refused`,
  emitBytes: (bytes: number, max: number) =>
    `this.$emit: the event is ${bytes} bytes as JSON, more than the ${max} bytes allowed per event (SLUICE_MAX_EMIT_BYTES=${max})`,
  runEmitBytes: (total: number, max: number) =>
    `this.$emit: the events of this run would total ${total} bytes as JSON, more than the ${max} bytes allowed per run (SLUICE_MAX_RUN_EMIT_BYTES=${max})`,
  metaChars: (field: 'id' | 'name' | 'summary', chars: number, max: number) =>
    `this.$emit: meta.${field} is ${chars} characters long, more than the ${max} allowed`,
  sendCount: (max: number) =>
    `$.send: a step may queue at most ${max} sends (SLUICE_MAX_EMITS_PER_RUN=${max}); this send and any later ones are refused`,
  sendBytes: (kind: string, bytes: number, max: number) =>
    `$.send.${kind}: the send is ${bytes} bytes as JSON, more than the ${max} bytes allowed per send (SLUICE_MAX_EMIT_BYTES=${max})`,
  runSendBytes: (kind: string, total: number, max: number) =>
    `$.send.${kind}: the sends of this step would total ${total} bytes as JSON, more than the ${max} bytes allowed per step (SLUICE_MAX_RUN_EMIT_BYTES=${max})`,
  exportBytes: (name: string, total: number, max: number) =>
    `$.export(${quoted(name)}): the exports of this step would total ${total} bytes as JSON, more than the ${max} bytes allowed`,
  dbKeyChars: (key: string, max: number) =>
    `db.set(${quoted(key)}): the key is ${key.length} characters long, more than the ${max} allowed`,
  dbRunBytes: (key: string, total: number, max: number) =>
    `db.set(${quoted(key)}): this run would write ${total} bytes to the db, more than the ${max} bytes allowed per run (SLUICE_MAX_DB_WRITE_BYTES_PER_RUN=${max})`,
  dbSourceBytes: (key: string, total: number, max: number) =>
    `db.set(${quoted(key)}): the source's db would hold ${total} bytes, more than the ${max} bytes allowed per source (SLUICE_MAX_DB_BYTES_PER_SOURCE=${max})`,
};

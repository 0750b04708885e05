import { MAX_EXPORT_BYTES, outputLimitMessages, RunOutputLimits } from './guest/run-output-limits.guest';
import type { GuestOutcome } from './guest-result.parser';
import type { SandboxEmit } from './sandbox.types';

/**
 * Largest value an entry point may return (bytes as JSON). The server never reads it, so a larger
 * one is dropped rather than carried over IPC.
 */
export const MAX_RETURN_VALUE_BYTES = 1024 * 1024;

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value ?? null) ?? 'null', 'utf8');
}

/**
 * Why `emit` (the `index`-th of its run) breaks a limit, or its size when it is within every limit.
 * `measure` false: the whole result is too small to break a byte limit, so sizes are not computed.
 */
function emitBreach(emit: SandboxEmit, index: number, runBytes: number, limits: RunOutputLimits, measure: boolean): { message: string } | { bytes: number } {
  if (index >= limits.maxEmits) return { message: outputLimitMessages.emitCount(limits.maxEmits) };
  const bytes = measure ? jsonBytes(emit.event) : 0;
  if (bytes > limits.maxEmitBytes) return { message: outputLimitMessages.emitBytes(bytes, limits.maxEmitBytes) };
  if (runBytes + bytes > limits.maxRunEmitBytes) return { message: outputLimitMessages.runEmitBytes(runBytes + bytes, limits.maxRunEmitBytes) };
  const { id, name, summary } = emit.meta;
  if (typeof id === 'string' && id.length > limits.maxEmitIdChars) return { message: outputLimitMessages.metaChars('id', id.length, limits.maxEmitIdChars) };
  if (name !== undefined && name.length > limits.maxEmitNameChars) return { message: outputLimitMessages.metaChars('name', name.length, limits.maxEmitNameChars) };
  if (summary !== undefined && summary.length > limits.maxEmitSummaryChars) {
    return { message: outputLimitMessages.metaChars('summary', summary.length, limits.maxEmitSummaryChars) };
  }
  return { bytes };
}

/**
 * The worker's check of a guest result against the run output limits (the guest runtime checks
 * the same at each call, but a component can tamper with the runtime in its own isolate). Emits
 * and db writes are kept in order up to the first one that breaks a limit; it and everything after
 * it are dropped, as the guest would have refused it. A result cut here is a failure naming the
 * limit (the guest's own error, if any, is replaced: its runtime was bypassed). The per-source db cap is checked by the source's actor,
 * which knows the source's size. A return value over MAX_RETURN_VALUE_BYTES is dropped with a
 * warning (`warn`), and the run keeps its outcome. An action's sends are checked like emits
 * (count, bytes per send, bytes in all) and its exports against MAX_EXPORT_BYTES; a cut action
 * result has no sends and no flow exit, as a failed step's.
 *
 * `resultChars` is the length of the result's JSON text when known. Any part of it takes at most
 * 3 UTF-8 bytes per character, so a result whose text cannot reach a byte limit skips measuring
 * (re-serialising) each event and value: the common small run pays only for counts and lengths.
 */
export function enforceRunOutput(
  outcome: GuestOutcome,
  limits: RunOutputLimits,
  warn: (message: string) => void = () => undefined,
  resultChars?: number,
): GuestOutcome {
  const byteBound = Math.min(limits.maxEmitBytes, limits.maxRunEmitBytes, limits.maxDbWriteBytesPerRun, MAX_RETURN_VALUE_BYTES, MAX_EXPORT_BYTES);
  const measure = resultChars === undefined || resultChars * 3 > byteBound;
  if (measure && outcome.returnValue !== undefined) {
    const bytes = jsonBytes(outcome.returnValue);
    if (bytes > MAX_RETURN_VALUE_BYTES) {
      warn(`the returned value is ${bytes} bytes as JSON, more than the ${MAX_RETURN_VALUE_BYTES} bytes kept: it was dropped`);
      outcome = { ...outcome };
      delete outcome.returnValue;
    }
  }
  let breach: string | null = null;
  let emitBytes = 0;
  let emits = outcome.emits;
  for (let i = 0; i < emits.length; i++) {
    const check = emitBreach(emits[i], i, emitBytes, limits, measure);
    if ('message' in check) {
      breach = check.message;
      emits = emits.slice(0, i);
      break;
    }
    emitBytes += check.bytes;
  }
  let dbWrites = outcome.dbWrites;
  let writeBytes = 0;
  for (let i = 0; i < dbWrites.length; i++) {
    const { key, value } = dbWrites[i];
    let refused: string | null = null;
    if (key.length > limits.maxDbKeyChars) refused = outputLimitMessages.dbKeyChars(key, limits.maxDbKeyChars);
    else if (measure) {
      writeBytes += Buffer.byteLength(key, 'utf8') + jsonBytes(value);
      if (writeBytes > limits.maxDbWriteBytesPerRun) refused = outputLimitMessages.dbRunBytes(key, writeBytes, limits.maxDbWriteBytesPerRun);
    }
    if (refused) {
      breach ??= refused;
      dbWrites = dbWrites.slice(0, i);
      break;
    }
  }
  let sends = outcome.sends;
  if (sends) {
    let sendBytes = 0;
    for (let i = 0; i < sends.length; i++) {
      let refused: string | null = null;
      const bytes = measure ? jsonBytes(sends[i].params) : 0;
      if (i >= limits.maxEmits) refused = outputLimitMessages.sendCount(limits.maxEmits);
      else if (bytes > limits.maxEmitBytes) refused = outputLimitMessages.sendBytes(sends[i].kind, bytes, limits.maxEmitBytes);
      else if (sendBytes + bytes > limits.maxRunEmitBytes) refused = outputLimitMessages.runSendBytes(sends[i].kind, sendBytes + bytes, limits.maxRunEmitBytes);
      if (refused) {
        breach ??= refused;
        sends = sends.slice(0, i);
        break;
      }
      sendBytes += bytes;
    }
  }
  let exported = outcome.exports;
  if (exported && measure) {
    let total = 0;
    for (const [name, value] of Object.entries(exported)) total += Buffer.byteLength(name, 'utf8') + jsonBytes(value);
    if (total > MAX_EXPORT_BYTES) {
      breach ??= outputLimitMessages.exportBytes('*', total, MAX_EXPORT_BYTES);
      exported = {};
    }
  }
  if (breach === null) return outcome;
  const cut: GuestOutcome = {
    ...outcome,
    ok: false,
    emits,
    dbWrites,
    error: { name: 'OutputLimitError', message: `the run's result broke a limit its runtime should have enforced: ${breach}`, kind: 'invalid' },
  };
  if (exported) cut.exports = exported;
  // A failed step's sends are never performed, and its flow exit does not happen.
  delete cut.sends;
  delete cut.flowExit;
  return cut;
}

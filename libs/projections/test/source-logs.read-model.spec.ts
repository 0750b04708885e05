import { EventTypes } from '@app/domain';
import { KEPT_PER_SOURCE } from '../src/read-models/read-model';
import { SourceLogsReadModel } from '../src/read-models/source-logs.read-model';
import { databaseWith, fold, queriesOver, recordInLog, rows, T0, TestLog } from './read-model-harness';

describe('SourceLogsReadModel', () => {
  const setup = () => {
    const db = databaseWith(SourceLogsReadModel.definition);
    return { db, model: new SourceLogsReadModel(db), log: new TestLog() };
  };
  const run = (log: TestLog, sourceId = 'dc_1') => log.event(EventTypes.sourceRunCompleted, {
    sourceId, runId: 'r', trigger: 'http', requestId: 'q', ok: false, error: { name: 'Error', message: 'boom', kind: 'user' },
    logs: [{ level: 'log', message: 'hi', ts: 5 }], emitted: 1, durationMs: 7,
  });

  it('given a run and a hook run, then each is a log entry with its outcome and logs', () => {
    const { db, model, log } = setup();
    model.live = true;
    const events = [
      run(log),
      log.event(EventTypes.sourceHookRan, { sourceId: 'dc_1', hook: 'deploy', ok: true, logs: [], durationMs: 2 }),
    ];
    fold(db, model, events);
    // The row keeps the record's position; the entry's data stays in the log, where the queries read it.
    expect(rows(db, 'SELECT * FROM rm_source_logs ORDER BY pos')).toEqual([
      { source_id: 'dc_1', pos: 1, kind: 'run', at: T0 + 1000 },
      { source_id: 'dc_1', pos: 2, kind: 'hook:deploy', at: T0 + 2000 },
    ]);
    const runData = { trigger: 'http', ok: false, error: { name: 'Error', message: 'boom', kind: 'user' }, logs: [{ level: 'log', message: 'hi', ts: 5 }], emitted: 1, duration_ms: 7 };
    const hookData = { ok: true, logs: [], duration_ms: 2 };
    recordInLog(db, events);
    const queries = queriesOver(db);
    // toEqual: a hook without an error reads `error: undefined`, which the API's JSON leaves out, as the stored text did.
    expect(queries.sourceLogs('dc_1', 10)).toEqual([
      { source_id: 'dc_1', pos: 2, kind: 'hook:deploy', at: T0 + 2000, data: hookData },
      { source_id: 'dc_1', pos: 1, kind: 'run', at: T0 + 1000, data: runData },
    ]);
    expect(queries.sourceLogsAfter('dc_1', 1, 10).map((r) => [r.pos, r.data])).toEqual([[2, hookData]]);
    // The live stream gets the same entries from the fold.
    expect(model.takeLogged().map((l) => l.data)).toEqual([runData, hookData]);
  });

  it(`given many runs, then the newest ${KEPT_PER_SOURCE} (and those since the last trim) remain`, () => {
    const { db, model, log } = setup();
    fold(db, model, Array.from({ length: 121 }, () => run(log)));
    const positions = rows<{ pos: number }>(db, 'SELECT pos FROM rm_source_logs ORDER BY pos').map((r) => r.pos);
    expect(positions[0]).toBe(21);
    expect(positions).toHaveLength(101);
  });

  it('when the source is deleted, then its log entries go, and other sources keep theirs', () => {
    const { db, model, log } = setup();
    fold(db, model, [run(log), run(log, 'dc_2'), log.event(EventTypes.sourceDeleted, { sourceId: 'dc_1', accountId: 'u_1' })]);
    expect(rows(db, 'SELECT source_id FROM rm_source_logs')).toEqual([{ source_id: 'dc_2' }]);
  });
});

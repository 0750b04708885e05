import { EventTypes } from '@app/domain';
import { PendingRequestsReadModel } from '../src/read-models/pending-requests.read-model';
import { databaseWith, fold, rows, TestLog } from './read-model-harness';

describe('PendingRequestsReadModel', () => {
  const setup = () => {
    const db = databaseWith(PendingRequestsReadModel.definition);
    return { db, model: new PendingRequestsReadModel(db), log: new TestLog() };
  };
  const received = (log: TestLog, requestId: string, sourceId = 'dc_1') => log.event(EventTypes.httpRequestReceived, {
    sourceId, requestId, method: 'POST', path: '/', query: {}, headers: {}, bodyRaw: '', body: null,
  });
  const ran = (log: TestLog, requestId?: string) => log.event(EventTypes.sourceRunCompleted, {
    sourceId: 'dc_1', runId: 'r', trigger: requestId ? 'http' : 'timer', requestId, ok: true, logs: [], emitted: 0, durationMs: 1,
  });

  it('given requests received, then each is pending until its run is recorded', () => {
    const { db, model, log } = setup();
    fold(db, model, [received(log, 'q1'), received(log, 'q2'), ran(log, 'q1'), ran(log)]);
    expect(rows(db, 'SELECT * FROM rm_pending_requests')).toEqual([{ request_id: 'q2', source_id: 'dc_1', pos: 2 }]);
  });

  it('given a request and its run in one batch, then no row is written at all', () => {
    const { db, model, log } = setup();
    db.exec(`CREATE TABLE writes (n INTEGER);
      CREATE TRIGGER counted AFTER INSERT ON rm_pending_requests BEGIN INSERT INTO writes VALUES (1); END;`);
    fold(db, model, [received(log, 'q1'), ran(log, 'q1'), received(log, 'q2')]);
    expect(rows(db, 'SELECT request_id FROM rm_pending_requests')).toEqual([{ request_id: 'q2' }]);
    expect(rows(db, 'SELECT count(*) AS n FROM writes')).toEqual([{ n: 1 }]);
  });

  it('given a request in one batch and its run in the next, then it is pending in between', () => {
    const { db, model, log } = setup();
    fold(db, model, [received(log, 'q1')]);
    expect(rows(db, 'SELECT request_id FROM rm_pending_requests')).toEqual([{ request_id: 'q1' }]);
    fold(db, model, [ran(log, 'q1')]);
    expect(rows(db, 'SELECT request_id FROM rm_pending_requests')).toEqual([]);
  });

  it('given a batch that was rolled back, then none of its requests is written by the next one', () => {
    const { db, model, log } = setup();
    const handlers = model.handlers as Record<string, (e: unknown) => void>;
    handlers[EventTypes.httpRequestReceived](received(log, 'lost'));
    model.discard();
    fold(db, model, [received(log, 'q2')]);
    expect(rows(db, 'SELECT request_id FROM rm_pending_requests')).toEqual([{ request_id: 'q2' }]);
  });

  it('when a request is folded again, then it keeps its first position', () => {
    const { db, model, log } = setup();
    const first = received(log, 'q1');
    fold(db, model, [first, { ...first, position: 9n }]);
    expect(rows(db, 'SELECT pos FROM rm_pending_requests')).toEqual([{ pos: 1 }]);
    fold(db, model, [{ ...first, position: 12n }]);
    expect(rows(db, 'SELECT pos FROM rm_pending_requests')).toEqual([{ pos: 1 }]);
  });

  it('when the source is deleted, then its pending requests go', () => {
    const { db, model, log } = setup();
    fold(db, model, [received(log, 'q1'), received(log, 'q2', 'dc_2'), log.event(EventTypes.sourceDeleted, { sourceId: 'dc_1', accountId: 'u_1' })]);
    expect(rows(db, 'SELECT request_id FROM rm_pending_requests')).toEqual([{ request_id: 'q2' }]);
  });
});

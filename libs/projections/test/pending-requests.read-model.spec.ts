import { EventTypes } from '@app/domain';
import { LazyLogEvent } from '@app/event-store';
import { PendingRequestsReadModel, requestKeysOf } from '../src/read-models/pending-requests.read-model';
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

  describe('a request folded from its stored text (LazyLogEvent: the inline fold, a rebuild)', () => {
    const stored = (text: string, position = 1n) => new LazyLogEvent(EventTypes.httpRequestReceived, position, text, '{"at":1}');

    it('takes both ids from the start of the text without parsing the rest', () => {
      // Not JSON past the ids: parsing it would throw.
      const e = stored('{"sourceId":"dc_7","requestId":"0196a1b2-0000-7000-8000-000000000001","headers":{');
      expect(requestKeysOf(e as never)).toEqual({ sourceId: 'dc_7', requestId: '0196a1b2-0000-7000-8000-000000000001' });
      const { db, model } = setup();
      fold(db, model, [e as never]);
      expect(rows(db, 'SELECT * FROM rm_pending_requests')).toEqual([{ request_id: '0196a1b2-0000-7000-8000-000000000001', source_id: 'dc_7', pos: 1 }]);
    });

    it('gives what JSON.parse gives for texts the endpoint writes, and parses any other', () => {
      const texts = [
        JSON.stringify({ sourceId: 'dc_1', requestId: 'q1', method: 'POST', headers: { 'x-a': 'b"c' }, body: { sourceId: 'other' } }),
        // Escaped characters in an id: parsed, so the value is unescaped.
        JSON.stringify({ sourceId: 'dc_"1', requestId: 'q\\1', method: 'GET' }),
        // Another key order (another writer): parsed.
        JSON.stringify({ requestId: 'q2', sourceId: 'dc_2' }),
        JSON.stringify({ sourceId: 'dc_3', method: 'GET', requestId: 'q3' }),
      ];
      for (const text of texts) {
        const parsed = JSON.parse(text) as { sourceId: string; requestId: string };
        const { sourceId, requestId } = requestKeysOf(stored(text) as never);
        expect({ sourceId, requestId }).toEqual({ sourceId: parsed.sourceId, requestId: parsed.requestId });
      }
    });

    it('and a run folded after it finds the same row', () => {
      const { db, model, log } = setup();
      fold(db, model, [stored(JSON.stringify({ sourceId: 'dc_1', requestId: 'q1', method: 'POST' })) as never]);
      fold(db, model, [ran(log, 'q1')]);
      expect(rows(db, 'SELECT * FROM rm_pending_requests')).toEqual([]);
    });
  });
});

import { EventTypes, SourceEventEmitted } from '@app/domain';
import { KEPT_PER_SOURCE } from '../src/read-models/read-model';
import { SourceEventsReadModel } from '../src/read-models/source-events.read-model';
import { databaseWith, fold, queriesOver, recordInLog, rows, TestLog } from './read-model-harness';

describe('SourceEventsReadModel', () => {
  const setup = () => {
    const db = databaseWith(SourceEventsReadModel.definition);
    return { db, model: new SourceEventsReadModel(db), log: new TestLog() };
  };
  const emitted = (log: TestLog, summaryId: string, name?: string, sourceId = 'dc_1') => {
    const data: SourceEventEmitted = {
      sourceId, accountId: 'u_1', emitId: `em-${sourceId}-${summaryId}`, runId: 'run', summaryId, event: { summaryId }, meta: name ? { name } : {},
    };
    return log.event(EventTypes.sourceEventEmitted, data);
  };
  const ids = (db: ReturnType<typeof setup>['db'], sourceId = 'dc_1') =>
    rows<{ summary_id: string }>(db, 'SELECT summary_id FROM rm_source_events WHERE source_id = ? ORDER BY ms, seq', sourceId).map((r) => r.summary_id);

  it('given emits, then each is kept with its channel, order key and payload', () => {
    const { db, model, log } = setup();
    const events = [emitted(log, '1000-0', 'orders'), emitted(log, '1000-1'), log.event(EventTypes.sourceEventEmitted, {
      sourceId: 'dc_1', accountId: 'u_1', emitId: 'em-none', runId: 'run', summaryId: '1000-2', event: undefined, meta: {},
    })];
    fold(db, model, events);
    // The row keeps the emit's position; payload and meta stay in the log, where the queries read them.
    expect(rows(db, 'SELECT * FROM rm_source_events ORDER BY seq')).toEqual([
      { source_id: 'dc_1', summary_id: '1000-0', ms: 1000, seq: 0, channel: 'orders', emit_id: 'em-dc_1-1000-0', pos: 1 },
      { source_id: 'dc_1', summary_id: '1000-1', ms: 1000, seq: 1, channel: '', emit_id: 'em-dc_1-1000-1', pos: 2 },
      { source_id: 'dc_1', summary_id: '1000-2', ms: 1000, seq: 2, channel: '', emit_id: 'em-none', pos: 3 },
    ]);
    recordInLog(db, events);
    const queries = queriesOver(db);
    const listed = queries.sourceEvents('dc_1', 10).map((r) => ({ ...r, event: JSON.parse(r.event), meta: JSON.parse(r.meta) }));
    expect(listed).toEqual([
      { source_id: 'dc_1', summary_id: '1000-2', ms: 1000, seq: 2, channel: '', emit_id: 'em-none', event: null, meta: {} },
      { source_id: 'dc_1', summary_id: '1000-1', ms: 1000, seq: 1, channel: '', emit_id: 'em-dc_1-1000-1', event: { summaryId: '1000-1' }, meta: {} },
      { source_id: 'dc_1', summary_id: '1000-0', ms: 1000, seq: 0, channel: 'orders', emit_id: 'em-dc_1-1000-0', event: { summaryId: '1000-0' }, meta: { name: 'orders' } },
    ]);
    expect(queries.sourceEvents('dc_1', 10, 'orders').map((r) => r.summary_id)).toEqual(['1000-0']);
    expect(queries.sourceEventsAfter('dc_1', 1000, 0, 10).map((r) => [r.summary_id, JSON.parse(r.event)])).toEqual([
      ['1000-1', { summaryId: '1000-1' }], ['1000-2', null],
    ]);
  });

  it('given a summary id that is not <ms>-<seq>, then it is kept under key 0-0 and the fold goes on', () => {
    const { db, model, log } = setup();
    fold(db, model, [emitted(log, 'not-a-key'), emitted(log, '1000-1')]);
    expect(rows(db, 'SELECT summary_id, ms, seq FROM rm_source_events ORDER BY ms, seq')).toEqual([
      { summary_id: 'not-a-key', ms: 0, seq: 0 }, { summary_id: '1000-1', ms: 1000, seq: 1 },
    ]);
  });

  it(`given more than ${KEPT_PER_SOURCE} emits on a channel, then the newest ${KEPT_PER_SOURCE} remain after the next trim`, () => {
    const { db, model, log } = setup();
    fold(db, model, Array.from({ length: 121 }, (_, seq) => emitted(log, `5000-${seq}`)));
    const kept = ids(db);
    expect(kept).toHaveLength(KEPT_PER_SOURCE);
    expect(kept[0]).toBe('5000-21');
    expect(kept.at(-1)).toBe('5000-120');
  });

  it(`given channels and sources interleaved, then every trim keeps the newest ${KEPT_PER_SOURCE} of its own channel of its own source`, () => {
    const { db, model, log } = setup();
    // Reference: the rows a trim after every 20th seq leaves, computed in plain code.
    const expected = new Map<string, { ms: number; seq: number; id: string }[]>();
    const events = [];
    for (let seq = 0; seq < 700; seq++) {
      const ms = 7000 + (seq % 3 === 0 ? 1000 : 0) + Math.floor(seq / 50); // not in insertion order
      const channel = seq % 5 === 0 ? 'c' : seq % 2 === 0 ? 'a' : 'b';
      const source = seq % 4 < 2 ? 'dc_1' : 'dc_2';
      events.push(emitted(log, `${ms}-${seq}`, channel, source));
      const key = `${source}/${channel}`;
      const list = [...(expected.get(key) ?? []), { ms, seq, id: `${ms}-${seq}` }].sort((x, y) => x.ms - y.ms || x.seq - y.seq);
      expected.set(key, seq % 20 === 0 ? list.slice(-KEPT_PER_SOURCE) : list);
    }
    fold(db, model, events);
    for (const [key, list] of expected) {
      const [source, channel] = key.split('/');
      const kept = rows<{ summary_id: string }>(db, 'SELECT summary_id FROM rm_source_events WHERE source_id = ? AND channel = ? ORDER BY ms, seq', source, channel)
        .map((r) => r.summary_id);
      expect(kept).toEqual(list.map((e) => e.id));
    }
    // Some channels were trimmed, and some never reached the limit.
    expect(rows(db, 'SELECT count(*) AS n FROM rm_source_events')).toEqual([{ n: [...expected.values()].reduce((n, l) => n + l.length, 0) }]);
    expect([...expected.values()].some((l) => l.length >= KEPT_PER_SOURCE)).toBe(true);
    expect([...expected.values()].some((l) => l.length < KEPT_PER_SOURCE)).toBe(true);
  });

  it('when a range is cleared, then only the emits inside it (inclusive) go; clearing with no range empties the source', () => {
    const { db, model, log } = setup();
    fold(db, model, [emitted(log, '1000-0'), emitted(log, '1000-1'), emitted(log, '2000-2'), emitted(log, '3000-3'), emitted(log, '1000-0', '', 'dc_2')]);
    fold(db, model, [log.event(EventTypes.sourceEventsCleared, { sourceId: 'dc_1', startId: '1000-1', endId: '2000-2' })]);
    expect(ids(db)).toEqual(['1000-0', '3000-3']);
    fold(db, model, [log.event(EventTypes.sourceEventsCleared, { sourceId: 'dc_1', endId: '1000-0' })]);
    expect(ids(db)).toEqual(['3000-3']);
    fold(db, model, [log.event(EventTypes.sourceEventsCleared, { sourceId: 'dc_1' })]);
    expect(ids(db)).toEqual([]);
    expect(ids(db, 'dc_2')).toEqual(['1000-0']);
  });

  it('when the source is deleted, then its emits go', () => {
    const { db, model, log } = setup();
    fold(db, model, [emitted(log, '1000-0'), log.event(EventTypes.sourceDeleted, { sourceId: 'dc_1', accountId: 'u_1' })]);
    expect(ids(db)).toEqual([]);
  });

  it('collects emits for live streams only while live, and forgets them on discard', () => {
    const { db, model, log } = setup();
    fold(db, model, [emitted(log, '1000-0')]);
    expect(model.takeEmitted()).toEqual([]);
    model.live = true;
    fold(db, model, [emitted(log, '1000-1', 'orders')]);
    expect(model.takeEmitted()).toEqual([{
      sourceId: 'dc_1', summaryId: '1000-1', ms: 1000, channel: 'orders', emitId: 'em-dc_1-1000-1', event: { summaryId: '1000-1' }, meta: { name: 'orders' },
    }]);
    expect(model.takeEmitted()).toEqual([]);
    fold(db, model, [emitted(log, '1000-2')]);
    model.discard();
    expect(model.takeEmitted()).toEqual([]);
  });
});

import { EventTypes, SourceConfig } from '@app/domain';
import { SourcesReadModel } from '../src/read-models/sources.read-model';
import { databaseWith, fold, rows, T0, TestLog } from './read-model-harness';

describe('SourcesReadModel', () => {
  const config: SourceConfig = { componentId: 'sc_1', name: 'Hello', nameSlug: 'hello', configuredProps: { n: 1 }, active: true, endpointKey: 'ek1' };
  const setup = () => {
    const db = databaseWith(SourcesReadModel.definition);
    const model = new SourcesReadModel(db);
    const log = new TestLog();
    fold(db, model, [
      log.event(EventTypes.sourceDeployRequested, { sourceId: 'dc_1', accountId: 'u_1', ...config }),
      log.event(EventTypes.sourceDeployed, { sourceId: 'dc_1' }),
    ]);
    return { db, model, log };
  };
  const source = (db: ReturnType<typeof setup>['db']) => rows(db, 'SELECT * FROM rm_sources')[0];
  const boom = { name: 'Error', message: 'boom' };

  it('given a deploy requested then done, then the source is deployed with its config and activation time', () => {
    const { db } = setup();
    expect(source(db)).toEqual({
      id: 'dc_1', account_id: 'u_1', component_id: 'sc_1', name: 'Hello', name_slug: 'hello', configured_props: '{"n":1}', active: 1,
      endpoint_key: 'ek1', status: 'deployed', created_at: T0 / 1000 + 1, updated_at: T0 / 1000 + 2, pos: 1,
      last_activated_at: T0 + 2000, last_timer_at: null, failing: 0, last_error: null,
    });
  });

  it('when a deploy fails, then nothing is left deployed', () => {
    const db = databaseWith(SourcesReadModel.definition);
    const model = new SourcesReadModel(db);
    const log = new TestLog();
    fold(db, model, [log.event(EventTypes.sourceDeployRequested, { sourceId: 'dc_1', accountId: 'u_1', ...config })]);
    expect(source(db)).toMatchObject({ status: 'deploying' });
    fold(db, model, [log.event(EventTypes.sourceDeployFailed, { sourceId: 'dc_1', hook: 'deploy', error: boom })]);
    expect(rows(db, 'SELECT * FROM rm_sources')).toEqual([]);
  });

  it('when updated, then it is updating, then carries the new config (or is back to deployed when the update failed)', () => {
    const { db, model, log } = setup();
    const next = { ...config, name: 'Next', nameSlug: 'next', active: false, endpointKey: undefined };
    fold(db, model, [log.event(EventTypes.sourceUpdateRequested, { sourceId: 'dc_1', ...next })]);
    expect(source(db)).toMatchObject({ status: 'updating', name: 'Hello' });
    fold(db, model, [log.event(EventTypes.sourceUpdated, { sourceId: 'dc_1', ...next })]);
    expect(source(db)).toMatchObject({
      status: 'deployed', name: 'Next', name_slug: 'next', active: 0, endpoint_key: null, updated_at: T0 / 1000 + 4, last_activated_at: T0 + 4000,
    });
    fold(db, model, [
      log.event(EventTypes.sourceUpdateRequested, { sourceId: 'dc_1', ...config }),
      log.event(EventTypes.sourceUpdateFailed, { sourceId: 'dc_1', hook: 'activate', error: boom }),
    ]);
    expect(source(db)).toMatchObject({ status: 'deployed', name: 'Next' });
  });

  it('when runs complete, then the last outcome marks it failing or clears it, and timer runs are timed', () => {
    const { db, model, log } = setup();
    const run = (ok: boolean, trigger: 'timer' | 'http') => log.event(EventTypes.sourceRunCompleted, {
      sourceId: 'dc_1', runId: 'r', trigger, ok, error: ok ? undefined : { ...boom, kind: 'user' }, logs: [], emitted: 0, durationMs: 1,
    });
    fold(db, model, [run(false, 'timer')]);
    expect(source(db)).toMatchObject({ failing: 1, last_error: JSON.stringify({ ...boom, kind: 'user', at: T0 + 3000 }), last_timer_at: T0 + 3000 });
    fold(db, model, [run(true, 'http')]);
    expect(source(db)).toMatchObject({ failing: 0, last_error: null, last_timer_at: T0 + 3000 });
  });

  it('when a delete fails, then it is deployed again; when it succeeds, then the row is gone', () => {
    const { db, model, log } = setup();
    fold(db, model, [log.event(EventTypes.sourceDeleteRequested, { sourceId: 'dc_1', ignoreHookErrors: false })]);
    expect(source(db)).toMatchObject({ status: 'deleting' });
    fold(db, model, [log.event(EventTypes.sourceDeleteFailed, { sourceId: 'dc_1', hook: 'deactivate', error: boom })]);
    expect(source(db)).toMatchObject({ status: 'deployed', updated_at: T0 / 1000 + 4 });
    fold(db, model, [
      log.event(EventTypes.sourceDeleteRequested, { sourceId: 'dc_1', ignoreHookErrors: true }),
      log.event(EventTypes.sourceDeleted, { sourceId: 'dc_1', accountId: 'u_1' }),
    ]);
    expect(rows(db, 'SELECT * FROM rm_sources')).toEqual([]);
  });
});

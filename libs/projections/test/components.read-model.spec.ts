import { ComponentDefinition, EventTypes } from '@app/domain';
import { ComponentsReadModel } from '../src/read-models/components.read-model';
import { databaseWith, fold, rows, T0, TestLog } from './read-model-harness';

describe('ComponentsReadModel', () => {
  const definition: ComponentDefinition = {
    name: 'Hello', key: 'hello', version: '0.0.1', type: 'source', props: [], hooks: [], methods: [], hasRun: true,
  };
  const setup = () => {
    const db = databaseWith(ComponentsReadModel.definition);
    return { db, model: new ComponentsReadModel(db), log: new TestLog() };
  };

  it('given a component saved, then its code, bundle and definition are kept; saving again replaces them', () => {
    const { db, model, log } = setup();
    const saved = (code: string) => log.event(EventTypes.componentSaved, {
      componentId: 'sc_1', accountId: 'u_1', code, codeHash: `h-${code}`, bundle: `b-${code}`, definition,
    });
    fold(db, model, [saved('v1')]);
    expect(rows(db, 'SELECT * FROM rm_components')).toEqual([{
      id: 'sc_1', account_id: 'u_1', key: 'hello', name: 'Hello', version: '0.0.1', type: 'source', description: null, code: 'v1',
      code_hash: 'h-v1', definition: JSON.stringify(definition), bundle: 'b-v1', created_at: T0 / 1000 + 1, updated_at: T0 / 1000 + 1, pos: 1,
    }]);
    fold(db, model, [saved('v2')]);
    expect(rows(db, 'SELECT code, pos FROM rm_components')).toEqual([{ code: 'v2', pos: 2 }]);
  });

  it('when a key@version is published twice, then the first publication stays', () => {
    const { db, model, log } = setup();
    fold(db, model, [
      log.event(EventTypes.componentPublished, { componentId: 'sc_1', accountId: 'u_1', key: 'hello', version: '0.0.1', type: 'source', codeHash: 'h1' }),
      log.event(EventTypes.componentPublished, { componentId: 'sc_2', accountId: 'u_1', key: 'hello', version: '0.0.1', type: 'source', codeHash: 'h2' }),
      log.event(EventTypes.componentPublished, { componentId: 'sc_3', accountId: 'u_1', key: 'hello', version: '0.0.2', type: 'source', codeHash: 'h3' }),
    ]);
    expect(rows(db, 'SELECT * FROM rm_registry ORDER BY version')).toEqual([
      { account_id: 'u_1', key: 'hello', version: '0.0.1', type: 'source', component_id: 'sc_1', code_hash: 'h1', pos: 1 },
      { account_id: 'u_1', key: 'hello', version: '0.0.2', type: 'source', component_id: 'sc_3', code_hash: 'h3', pos: 3 },
    ]);
  });

  it('when a version is unpublished, then only that version leaves, and it can be published again with other code', () => {
    const { db, model, log } = setup();
    const published = (componentId: string, version: string, codeHash: string) =>
      log.event(EventTypes.componentPublished, { componentId, accountId: 'u_1', key: 'hello', version, type: 'source', codeHash });
    fold(db, model, [
      published('sc_1', '0.0.1', 'h1'),
      published('sc_2', '0.0.2', 'h2'),
      log.event(EventTypes.componentPublished, { componentId: 'sc_9', accountId: 'u_2', key: 'hello', version: '0.0.2', type: 'source', codeHash: 'h9' }),
      log.event(EventTypes.componentUnpublished, { componentId: 'sc_2', accountId: 'u_1', key: 'hello', version: '0.0.2' }),
    ]);
    expect(rows(db, "SELECT account_id, version, component_id FROM rm_registry ORDER BY account_id, version")).toEqual([
      { account_id: 'u_1', version: '0.0.1', component_id: 'sc_1' },
      { account_id: 'u_2', version: '0.0.2', component_id: 'sc_9' },
    ]);
    fold(db, model, [published('sc_3', '0.0.2', 'h3')]);
    expect(rows(db, "SELECT version, component_id FROM rm_registry WHERE account_id = 'u_1' ORDER BY version")).toEqual([
      { version: '0.0.1', component_id: 'sc_1' },
      { version: '0.0.2', component_id: 'sc_3' },
    ]);
  });
});

import { ApiError } from '../../http/api-error';
import { parseInput } from '../../http/input-validation.pipe';
import { RunActionDto } from '../../actions/dto/run-action.dto';
import { DeploySourceDto } from './deploy-source.dto';
import { UpdateSourceDto } from './update-source.dto';

/** The component reference fields shared by deploy, update and action runs. */
describe('component reference fields', () => {
  const fieldsOf = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      return (err as ApiError).details?.fields;
    }
    throw new Error('expected the input to be refused');
  };

  it('a deploy and an action run need one of them, and name component_id when none is given', () => {
    for (const dto of [DeploySourceDto, RunActionDto]) {
      expect(fieldsOf(() => parseInput(dto, { name: 'x' }))).toEqual({ component_id: 'or component_code, component_url or key is required' });
      expect(parseInput(dto, { key: 'my-action@1.0.0' })).toMatchObject({ key: 'my-action@1.0.0' });
      expect(parseInput(dto, { code: 'export default {}' })).toMatchObject({ code: 'export default {}' });
    }
  });

  it('an update may give none, and every one of them keeps its length cap', () => {
    expect(parseInput(UpdateSourceDto, { name: 'renamed' })).toMatchObject({ name: 'renamed', component_id: undefined });
    expect(Object.keys(fieldsOf(() => parseInput(UpdateSourceDto, { component_id: 'c'.repeat(200), key: 'k'.repeat(300) })) ?? {}).sort())
      .toEqual(['component_id', 'key']);
  });
});

import { Expose } from 'class-transformer';
import { Allow } from 'class-validator';

/**
 * A structured workflow parameter (`trigger`, `steps`, `settings`, a run's `event`) taken as sent:
 * its shape has many rules that name nested fields (`steps[1].configured_props.x`), so the
 * engine checks it and answers one 400 naming each.
 */
export function StructuredField(): PropertyDecorator {
  return (target, key) => {
    Expose()(target, key);
    Allow()(target, key);
  };
}

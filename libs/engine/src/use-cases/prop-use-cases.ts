import type { PropDefinition } from '@app/domain';
import { InvalidFieldsError, NotFoundError } from '../engine-errors';
import type { CompiledComponent, EngineRuntime } from '../engine-runtime';
import { effectiveProps, propOptions, PropOptionsPage } from '../prop-configuration';

/** Largest `prev_context` accepted, as JSON: it is what an earlier page returned, handed back. */
export const MAX_PREV_CONTEXT_BYTES = 16 * 1024;

/** `POST /v1/components/{id}/props/{prop}/options`: the props configured so far and where the user is in the list. */
export interface ListPropOptions {
  configuredProps?: Record<string, unknown>;
  /** 0-based page (default 0). */
  page?: number;
  /** The `context` the previous page returned (default `{}`). */
  prevContext?: unknown;
  /** What the user typed; given to the options method when the prop has `useQuery`. */
  query?: string;
}

/**
 * Configuring a saved component's props as a UI does (spec 2.5): one page of a prop's options,
 * and the props once `additionalProps()` ran for the values chosen so far. Nothing is recorded;
 * the component's code runs in the sandbox with the limits of a run, `this` bound as in `run`.
 */
export class PropUseCases {
  constructor(private readonly rt: EngineRuntime) {}

  /** One page of options of a prop (static, dynamic, or added by `additionalProps()`). Unknown component or prop: NotFoundError. */
  async options(accountId: string, idOrKey: string, prop: string, r: ListPropOptions): Promise<PropOptionsPage> {
    const comp = this.component(accountId, idOrKey);
    if (!comp.definition.hasAdditionalProps && !comp.definition.props.some((p) => p.name === prop)) throw new NotFoundError(`prop ${prop}`);
    const prevContext = r.prevContext ?? {};
    const bytes = Buffer.byteLength(JSON.stringify(prevContext) ?? 'null');
    if (bytes > MAX_PREV_CONTEXT_BYTES) {
      throw new InvalidFieldsError([{ field: 'prev_context', message: `is ${bytes} bytes as JSON; at most ${MAX_PREV_CONTEXT_BYTES} are accepted` }]);
    }
    return propOptions(this.rt, accountId, comp, prop, { configured: r.configuredProps ?? {}, page: r.page ?? 0, prevContext, query: r.query });
  }

  /** The component's props for these configured values: the static ones merged with what `additionalProps()` returns for them. */
  async reload(accountId: string, idOrKey: string, configuredProps: Record<string, unknown> = {}): Promise<PropDefinition[]> {
    return effectiveProps(this.rt, accountId, this.component(accountId, idOrKey), configuredProps);
  }

  private component(accountId: string, idOrKey: string): CompiledComponent {
    const row = this.rt.queries.ownComponent(accountId, idOrKey);
    return this.rt.component(row.id)!;
  }
}

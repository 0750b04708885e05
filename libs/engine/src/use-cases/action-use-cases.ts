import { definitionWarnings, runtimeProps, type FieldError } from '@app/domain';
import type { SandboxHttpResponse, SandboxSend } from '@app/sandbox';
import { actionInvocation, ActionObservation, actionObservations, throwawayActionStore } from '../action-invocation';
import { checkConfiguredProps } from '../configured-props-check';
import { ComponentConfigurationError, InvalidFieldsError, NotFoundError } from '../engine-errors';
import type { CompiledComponent, EngineRuntime } from '../engine-runtime';
import { effectiveProps } from '../prop-configuration';
import type { ComponentRef, ComponentUseCases } from './component-use-cases';

/** `POST /v1/actions/run`: the action (by id, code, URL, `key` or `key@version`) and its configured props. */
export interface RunAction {
  component: ComponentRef;
  configuredProps?: Record<string, unknown>;
}

/**
 * What one action run did (the original's "run an action" answer, plus what this server adds).
 * `sends` are the `$.send.*` calls of a successful run, validated but not performed: performing
 * them is the workflow runner's job, after the step's outcome is recorded.
 */
export interface ActionRunOutcome {
  componentId: string;
  ok: boolean;
  ret: unknown;
  exports: Record<string, unknown>;
  summary?: string;
  os: ActionObservation[];
  sends: SandboxSend[];
  httpResponse?: SandboxHttpResponse;
  flowExit?: { reason: string };
  /** What the component's definition relies on beyond the spec (definitionWarnings). */
  warnings: FieldError[];
}

/**
 * Running an action once, outside any workflow. Nothing is recorded: the run has no stream, its
 * `$.service.db` store is thrown away, and its sends are returned, not performed.
 */
export class ActionUseCases {
  constructor(
    private readonly rt: EngineRuntime,
    private readonly components: ComponentUseCases,
  ) {}

  /**
   * Runs the action's `run({ $, steps })` with `steps` empty. Props are validated as for sources;
   * an error named `ConfigurationError` is a ComponentConfigurationError; any other failure of the
   * code is an outcome with `ok: false` and the error in `os`.
   */
  async run(accountId: string, r: RunAction): Promise<ActionRunOutcome> {
    this.rt.assertWritable();
    const componentId = (await this.components.resolve(accountId, r.component, true))!;
    const comp = this.actionComponent(accountId, componentId);
    const props = await effectiveProps(this.rt, accountId, comp, r.configuredProps ?? {});
    const { values, errors } = checkConfiguredProps(this.rt, accountId, props, r.configuredProps);
    if (errors.length) throw new InvalidFieldsError(errors);
    const inv = actionInvocation(comp, {
      // One warm isolate per account and code for ad-hoc runs: module state never crosses accounts.
      instanceId: `${accountId}/actions-run@${comp.codeHash}`,
      props: runtimeProps(values, this.rt.box),
      steps: {},
      store: throwawayActionStore(),
    });
    const result = await this.rt.invoke(accountId, inv);
    if (!result.ok && result.error?.name === 'ConfigurationError') throw new ComponentConfigurationError(result.error.message);
    const outcome: ActionRunOutcome = {
      componentId,
      ok: result.ok,
      ret: result.returnValue ?? null,
      exports: result.exports ?? {},
      os: actionObservations(result),
      sends: result.sends ?? [],
      warnings: definitionWarnings(comp.definition),
    };
    if (result.summary !== undefined) outcome.summary = result.summary;
    if (result.httpResponse) outcome.httpResponse = result.httpResponse;
    if (result.flowExit) outcome.flowExit = result.flowExit;
    return outcome;
  }

  /** A component of the account that is an action. */
  private actionComponent(accountId: string, componentId: string): CompiledComponent {
    const row = this.rt.queries.component(componentId);
    if (!row || row.account_id !== accountId) throw new NotFoundError(`component ${componentId}`, 'component_id');
    const comp = this.rt.component(componentId)!;
    if (comp.definition.type !== 'action') {
      throw new InvalidFieldsError([{ field: 'component_id', message: `is a ${comp.definition.type}; only actions can be run here` }]);
    }
    return comp;
  }
}

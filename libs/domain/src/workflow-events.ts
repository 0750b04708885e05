import type { RunLog, StoredProps } from './events';

/*
 * Payloads of the workflow events (issue 8). A workflow's definition lives on `workflow-<p>`;
 * each run on `workflowrun-<runId>`, so a run is folded from its own short stream and resumed
 * from it after a crash without reading any other run.
 */

/** How a workflow is started. */
export type WorkflowTrigger =
  | { type: 'http'; customResponse: boolean }
  | { type: 'timer'; intervalSeconds?: number; cron?: string; timezone?: string }
  | { type: 'emitter'; emitterId: string; eventName: string }
  | { type: 'manual' };

/** One step: a saved action (resolved at save) and its props, which may hold `{{steps...}}` references. */
export interface WorkflowStepConfig {
  name: string;
  componentId: string;
  /** The registry key the step was given by, when it was (shown back by the API). */
  key?: string;
  /** Stored props: secrets sealed, references kept as their text. */
  configuredProps: StoredProps;
}

export interface WorkflowSettings {
  /** Runs of this workflow at once; 1 keeps trigger order. */
  concurrency: number;
  /** Bound on a whole run (each step gets what is left of it). */
  timeoutSeconds?: number;
}

export interface WorkflowConfig {
  name: string;
  nameSlug: string;
  active: boolean;
  trigger: WorkflowTrigger;
  steps: WorkflowStepConfig[];
  settings: WorkflowSettings;
  /** Set for an HTTP trigger: `/e/<key>`; kept across updates. */
  endpointKey?: string;
}

/** `workflow.created.v1` / `workflow.updated.v1`: the whole definition at `version`. */
export interface WorkflowSaved { workflowId: string; accountId: string; version: number; config: WorkflowConfig }
export interface WorkflowDeleted { workflowId: string; accountId: string }

/** What started a run, as steps see it under `steps.trigger`. */
export interface RunTriggerRecord {
  event: unknown;
  context: { emitter_id: string; emit_id: string; ts: number; trigger: WorkflowTrigger['type'] };
}

/**
 * A run was accepted. It carries the steps of the workflow version it runs, so a run resumed after
 * an update (or a delete) finishes with the definition it started with.
 */
export interface WorkflowRunStarted {
  runId: string; workflowId: string; accountId: string; workflowVersion: number;
  steps: WorkflowStepConfig[];
  trigger: RunTriggerRecord;
  /** The caller of an HTTP trigger with a custom response waits for `$.respond`. */
  customResponse: boolean;
  timeoutSeconds?: number;
  /** Listener hops that led to this run (an emit it heard carried n: n+1); absent: 0. Its emits carry it on. */
  hops?: number;
  /**
   * The listener dispatch this run was started for (a workflow listening to an emit; since stop
   * 54): its start settles that dispatch in the listener-dispatches read model, as a listening
   * source's run record does, so no `listener.dispatched.v1` of its own is needed. Absent for runs
   * of other triggers and for runs older builds started (their dispatch was recorded apart).
   */
  dispatchId?: string;
}

/** The error of a failed step, as the runs API shows it. */
export interface StepError { name: string; message: string; stack?: string }

/** One `$.send.*` a step queued (performed after the step succeeds). */
export interface QueuedSend { kind: 'http' | 'email' | 's3' | 'emit' | 'sse'; params: Record<string, unknown> }

/** A step ran: its outcome, recorded once; a step with an outcome is never run again. */
export interface WorkflowStepCompleted {
  runId: string; workflowId: string; index: number; name: string;
  status: 'succeeded' | 'failed';
  ret?: unknown; exports: Record<string, unknown>; summary?: string; logs: RunLog[];
  error?: StepError; durationMs: number;
  sends: QueuedSend[];
  flowExit?: { reason: string };
  /** `$.respond(...)` of the step, handed to the HTTP caller when the step ends. */
  httpResponse?: { status: number; headers: Record<string, string>; body?: string; bodyBase64?: string };
  /** `$.service.db` writes of the step (last wins), folded into the step's store by later runs. */
  dbWrites?: { key: string; value: unknown }[];
}

/** A queued send was performed (or failed): one per send, in order. */
export interface WorkflowSendPerformed {
  runId: string; workflowId: string; stepIndex: number; sendIndex: number; kind: QueuedSend['kind'];
  ok: boolean; detail?: Record<string, unknown>; error?: string;
}

/** The run ended. `skipped` names the steps that did not run (after an exit or a failure). */
export interface WorkflowRunFinished {
  runId: string; workflowId: string; accountId: string;
  status: 'succeeded' | 'failed' | 'exited';
  exitReason?: string; skipped: string[];
}

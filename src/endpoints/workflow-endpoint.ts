import { isJsonBody, type HttpRequestEvent, type SluiceEngine, type WorkflowEndpointTarget } from '@app/engine';
import { jsonRequestBody } from '@app/sandbox';
import { checkGuestResponse } from './guest-http-response';
import { EndpointAnswer, rateLimitedAnswer } from './endpoint-answer';

/**
 * A request to an HTTP-triggered workflow. Its record is the run's `workflow.run_started`: the
 * caller's 200 waits for that to be durable. With `custom_response` the caller gets the
 * `$.respond` of the step that called it as soon as that step ends (the run goes on), or a 502
 * `no_response` when the run ends without one. `track` counts the run as waiting until it ends,
 * so a flood gets 429s instead of an unbounded backlog; so does a workflow whose own lane is full
 * (SLUICE_WORKFLOW_MAX_WAITING_RUNS), however few runs its account has waiting elsewhere.
 */
export async function answerWorkflowRequest(
  engine: SluiceEngine, target: WorkflowEndpointTarget, event: HttpRequestEvent, track: (runDone: Promise<void>) => void,
): Promise<EndpointAnswer> {
  if (!engine.workflows.hasRoom(target.workflowId)) return rateLimitedAnswer(`workflow ${target.workflowId} has too many runs waiting; retry shortly`);
  const run = engine.workflows.receive(target.workflowId, withJsonBody(event));
  // Counted against the same cap of waiting runs as source requests until the run has ended.
  track(run.done);
  await run.recorded;
  if (!target.customResponse) return { status: 200, json: { ok: true, run_id: run.runId } };
  const res = await run.response;
  if (!res) return { status: 502, json: { error: 'the workflow ended without calling $.respond()', code: 'no_response', run_id: run.runId } };
  const checked = checkGuestResponse(res);
  if (!checked.ok) {
    console.error(`sluice: workflow ${target.workflowId} run ${run.runId}: invalid custom response: ${checked.problem}`);
    return { status: 502, json: { error: `the workflow's response cannot be sent: ${checked.problem}`, code: 'invalid_response' } };
  }
  return { status: checked.status, headers: checked.headers, raw: checked.body };
}

/**
 * The event with its JSON body parsed: the endpoints leave a JSON body to a source's guest
 * (`SourceEndpoints.event`), but a workflow's trigger event is recorded with its body, as the
 * steps read it (`steps.trigger.event.body`). The same value a source's run gets.
 */
function withJsonBody(event: HttpRequestEvent): HttpRequestEvent {
  if (event.body !== undefined || !isJsonBody(event.headers['content-type'] ?? '', event.bodyRaw)) return event;
  return { ...event, body: jsonRequestBody(event.bodyRaw) };
}

import { BooleanField, TextField } from '../../http/input-fields';
import { StructuredField } from './workflow-fields';

/** What a workflow is made of besides its name (checked in depth by the engine, naming each field). */
class WorkflowFields {
  @StructuredField()
  trigger?: unknown;

  @StructuredField()
  steps?: unknown;

  @StructuredField()
  settings?: unknown;

  @BooleanField()
  active?: boolean;
}

/** `POST /v1/workflows`: `{name, trigger, steps, settings?, active?}` (API.md "Actions and workflows"). */
export class CreateWorkflowDto extends WorkflowFields {
  @TextField({ required: true })
  name!: string;
}

/** `PUT /v1/workflows/{id}`: the same fields, each optional (what is absent is kept). */
export class UpdateWorkflowDto extends WorkflowFields {
  @TextField()
  name?: string;
}

/** `POST /v1/workflows/{id}/run`: `{event}`, the run's `steps.trigger.event`. */
export class RunWorkflowDto {
  @StructuredField()
  event?: unknown;
}

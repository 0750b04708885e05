import { BooleanField, TextField } from '../../http/input-fields';
import { StructuredField } from './workflow-fields';

/** `POST /v1/workflows`: `{name, trigger, steps, settings?, active?}` (API.md "Actions and workflows"). */
export class CreateWorkflowDto {
  @TextField({ required: true })
  name!: string;

  @StructuredField()
  trigger?: unknown;

  @StructuredField()
  steps?: unknown;

  @StructuredField()
  settings?: unknown;

  @BooleanField()
  active?: boolean;
}

/** `PUT /v1/workflows/{id}`: the same fields, each optional (what is absent is kept). */
export class UpdateWorkflowDto {
  @TextField()
  name?: string;

  @StructuredField()
  trigger?: unknown;

  @StructuredField()
  steps?: unknown;

  @StructuredField()
  settings?: unknown;

  @BooleanField()
  active?: boolean;
}

/** `POST /v1/workflows/{id}/run`: `{event}`, the run's `steps.trigger.event`. */
export class RunWorkflowDto {
  @StructuredField()
  event?: unknown;
}

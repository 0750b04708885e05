import type { WorkflowConfig } from '@app/domain';
import type { WorkflowRow } from '@app/projections';

/**
 * Parsed workflow definitions, once per version: the endpoint path, each run's start, the lanes
 * (concurrency) and the timers all read them, and a version never changes once recorded.
 */
export class WorkflowConfigs {
  private readonly parsed = new Map<string, { version: number; config: WorkflowConfig }>();

  of(row: WorkflowRow): WorkflowConfig {
    const hit = this.parsed.get(row.id);
    if (hit && hit.version === row.version) return hit.config;
    const config = JSON.parse(row.config) as WorkflowConfig;
    this.parsed.set(row.id, { version: row.version, config });
    return config;
  }

  /** Forgets a deleted workflow. */
  drop(workflowId: string): void {
    this.parsed.delete(workflowId);
  }
}

export * from './read-model-schema';
export * from './read-models.projection';
export * from './read-model-queries';
export * from './page';
export * from './workflow-queries';
export { KEPT_RUNS_PER_WORKFLOW } from './read-models/workflow-runs.read-model';
export * from './app-queries';

export * from './read-model-schema';
export * from './read-models.projection';
export * from './read-model-queries';
export * from './page';

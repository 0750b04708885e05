/** Where in the component's code a problem is: 1-based line and 1-based column. */
export interface CodeLocation {
  line: number;
  column: number;
}

/**
 * The component's code cannot be bundled: a syntax or type-stripping error, or an import the
 * sandbox cannot satisfy. The message is meant for the component's author (a 400 at save).
 */
export class ComponentCodeError extends Error {
  constructor(
    message: string,
    readonly location?: CodeLocation,
  ) {
    super(message);
    this.name = 'ComponentCodeError';
  }
}

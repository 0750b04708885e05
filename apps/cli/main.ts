import { CommanderError } from 'commander';
import { CliError, EXIT } from './cli-error';
import { buildProgram } from './program';

/**
 * `pd`: parses the command line and runs the command. Every failure ends as one line on stderr
 * (`error: ...`) and an exit code from {@link EXIT}; usage errors print their line through
 * commander and exit 2.
 */
async function main(argv: string[]): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram((c) => (code = c));
  if (argv.length === 0) {
    program.outputHelp();
    return EXIT.ok;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are successes; everything else commander refuses is a usage error.
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version' ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof CliError) {
      process.stderr.write(`error: ${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`error: ${(err as Error).message ?? String(err)}\n`);
    return EXIT.failed;
  }
}

// `pd ... | head` closes the pipe early: that ends pd quietly, as for any Unix tool.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(EXIT.ok);
  throw err;
});

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
  // Let stdout drain (a pipe may be slow), then end even if a keep-alive socket lingers.
  process.stdout.write('', () => process.exit(code));
});

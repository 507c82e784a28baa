/**
 * The command line: a thin shell over library functions (STYLE.md 2). Every command of the product hangs off it.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';

export function buildProgram(): Command {
  const program = new Command('collections-sync')
    .description('Keeps a collections service in step with accounting platforms, and places AI collection calls.')
    .exitOverride()
    .showHelpAfterError();
  return program;
}

/** Runs the CLI and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    process.stderr.write(`collections-sync: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

const invokedDirectly = (() => {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
})();
if (invokedDirectly) {
  process.exitCode = await main(process.argv.slice(2));
}

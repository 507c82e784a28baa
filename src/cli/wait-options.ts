/**
 * The options of every command that can wait for its job (sync, backfill, dead-letters retry, calls campaign,
 * calls one): one wording, one set of exit codes (src/cli/actions/wait.ts). Light: loaded for --help.
 */
import type { Command } from 'commander';

/** `what`: what the command waits for, and its own exit codes of a finished wait. */
export function waitOptions(cmd: Command, what: string): Command {
  return cmd
    .option('--wait', `${what}; exit 1 if the job fails for good (its reason printed), 4 if the wait ends first (no worker, the worker vanished, --wait-timeout)`)
    .option('--keep-waiting', 'with --wait: go on waiting when no worker consumes the queue, at the start or later (default: say so and exit 4)')
    .option('--wait-timeout <duration>', 'with --wait: stop waiting after this long, e.g. 90s, 30m, 2h (default 24h); exit 4, the job goes on');
}

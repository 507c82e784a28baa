/**
 * The CLI says one thing one way (issue 28, item 3): a usage error is one line and exit 2, never followed by a help
 * text; an unknown command gets a "did you mean" hint; and every command that help texts, README and .env.example
 * name exists in the command tree.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli.js';
import { EXIT_CODES, MEANT } from '../../src/cli/help.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const root = (file: string): Promise<string> => readFile(fileURLToPath(new URL(`../../${file}`, import.meta.url)), 'utf8');

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

function* tree(cmd: Command): Generator<Command> {
  yield cmd;
  for (const sub of cmd.commands) yield* tree(sub);
}

/** Does `collections-sync <words>` name a command (a group alone counts; what follows a leaf is its arguments)? */
function exists(program: Command, words: string[]): boolean {
  let cmd = program;
  for (const w of words) {
    if (cmd.commands.length === 0 || w.startsWith('-') || w.startsWith('<') || w.startsWith('[')) return true;
    const sub = cmd.commands.find((c) => c.name() === w || c.aliases().includes(w));
    if (!sub) return false;
    cmd = sub;
  }
  return true;
}

/** `collections-sync <cmd> [<sub>]` (also `bin/collections-sync.js <cmd>`) in a text. */
const MENTION = /collections-sync(?:\.js)? ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?/g;
const mentions = (text: string): string[][] => [...text.matchAll(MENTION)].map((m) => [m[1]!, ...(m[2] ? [m[2]] : [])]);

describe('usage errors', () => {
  it('an unknown command, with --help or not, exits 2 with one line and a hint, no help text', async () => {
    const [inspect, stats, sub] = await Promise.all([cli(['inspect', '--help']), cli(['stats']), cli(['dead-letters', 'retyr', '--tenant', 'x'])]);
    for (const r of [inspect, stats, sub]) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.split('\n')).toHaveLength(2); // one line and its newline
      expect(r.stderr).not.toContain('Usage:');
    }
    expect(inspect.stderr).toMatch(/^collections-sync: unknown command 'inspect' \(did you mean status\?\); the commands of collections-sync: worker, /);
    expect(stats.stderr).toContain('(did you mean status?)');
    expect(sub.stderr).toContain("unknown command 'dead-letters retyr' (did you mean dead-letters retry?)");
  });

  it('an unknown option or a missing required option is one line naming the command and its --help', async () => {
    const [option, required, value] = await Promise.all([cli(['status', '--tenat', 'acme']), cli(['sync']), cli(['sync', '--tenant'])]);
    expect(option).toMatchObject({ code: 2, stdout: '', stderr: "collections-sync status: unknown option '--tenat' (did you mean --tenant?); see collections-sync status --help\n" });
    expect(required).toMatchObject({ code: 2, stdout: '', stderr: "collections-sync sync: required option '--tenant <id>' not specified; see collections-sync sync --help\n" });
    expect(value).toMatchObject({ code: 2, stderr: "collections-sync sync: option '--tenant <id>' argument missing; see collections-sync sync --help\n" });
  });

  it('names the exit codes once, with 2 for a refused confirmation and 4 for a wait that ended first', () => {
    expect(EXIT_CODES).toContain('2 bad usage or configuration, or a confirmation refused (nothing was done)');
    expect(EXIT_CODES).toContain('4 a --wait that ended before its job did');
  });
});

describe('help texts, README and .env.example name only commands that exist', () => {
  const program = buildProgram();
  const helpOf = (cmd: Command): string => {
    let text = '';
    cmd.configureOutput({ writeOut: (s) => (text += s) });
    cmd.outputHelp();
    return text;
  };

  it('help texts and the "did you mean" table', () => {
    for (const cmd of tree(program)) {
      for (const words of mentions(helpOf(cmd))) expect(exists(program, words), `${cmd.name()} --help names collections-sync ${words.join(' ')}`).toBe(true);
    }
    for (const [tried, meant] of Object.entries(MEANT)) {
      expect(exists(program, [tried]), `${tried} is a command: no hint needed`).toBe(false);
      expect(exists(program, meant.split(' ')), `the hint for ${tried}`).toBe(true);
    }
  });

  it('README and docs/: every collections-sync <command> in code, and every command of the table in "The command line"', async () => {
    const readme = await root('README.md');
    const docs = await Promise.all(readdirSync(fileURLToPath(new URL('../../docs', import.meta.url))).filter((f) => f.endsWith('.md')).map((f) => root(`docs/${f}`)));
    const code = [...[readme, ...docs].join('\n').matchAll(/```[\s\S]*?```|`[^`\n]+`/g)].map((m) => m[0]).join('\n');
    const named = mentions(code);
    expect(named.length).toBeGreaterThan(5);
    for (const words of named) expect(exists(program, words), `README names collections-sync ${words.join(' ')}`).toBe(true);
    const section = readme.slice(readme.indexOf('## The command line'), readme.indexOf('\n## ', readme.indexOf('## The command line') + 5));
    const rows = section.split('\n').filter((l) => l.startsWith('| `'));
    expect(rows.length).toBeGreaterThan(10);
    for (const row of rows) {
      const first = row.split(' | ')[0]!;
      for (const span of first.matchAll(/`([^`]+)`/g)) {
        const words = span[1]!.split(/\s+/);
        expect(exists(program, words), `README's command table names ${span[1]!}`).toBe(true);
      }
    }
  });

  it('.env.example: collections-sync <command>, and the commands its comments name in backticks', async () => {
    const example = await root('.env.example');
    const comments = example.split('\n').filter((l) => l.startsWith('#')).join('\n');
    // In prose, "collections-sync settings" is the product's name; a command line runs bin/collections-sync.js.
    for (const m of comments.matchAll(/collections-sync\.js ([a-z][a-z-]*)/g)) expect(exists(program, [m[1]!]), `.env.example runs collections-sync ${m[1]!}`).toBe(true);
    // Its comments put commands (and only commands) in backticks: `status`, `calls events`, `collections-sync dashboard`.
    for (const span of comments.matchAll(/`([^`]+)`/g)) {
      const words = span[1]!.replace(/^collections-sync /, '').split(/\s+/);
      expect(exists(program, words), `.env.example names the command \`${span[1]!}\``).toBe(true);
    }
  });
});

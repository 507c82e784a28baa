/**
 * Resolves a `.lua` file into the text Redis runs. Every script is a file of its own under `src/` (a room's `lua/`
 * folder; shared pieces in `lua/includes/`), named by its path from `src/` without `.lua` (`state/lua/pending-add`).
 * Two directives, each a whole line, so every file stays plain Lua for an editor, a linter and `redis-cli --eval`:
 *
 * - `--@include "state/lua/includes/packed-record"`: replaced by that file's resolved text, recursively. An include names a
 *   file as a script is named (its path from `src/`, without `.lua`): one name for a file wherever it is used. A file is included once per script: a second include of it (a
 *   script and one of its includes both pulling in `helpers`) is dropped. A missing file or a cycle is an error
 *   naming the file and line.
 * - `--@define LOAD`: replaced by `local LOAD = <value>`, the value taken from the defines the script was declared
 *   with (a TypeScript constant the Lua shares, such as the packed maps' LOAD). A name the script's defines do not
 *   hold is an error: a constant reaches Lua only through this table, never by splicing text.
 *
 * Pure (the files come from `read`), so it is tested without a disk; src/redis/lua-files.ts reads the real ones.
 */
import { posix } from 'node:path';

/** The constants a script's `--@define` lines may name (numbers only: their Lua text is unambiguous). */
export type LuaDefines = Readonly<Record<string, number>>;

/** The text of a `.lua` file by its name (path from `src/`, no `.lua`), or undefined when there is none. */
export type LuaReader = (name: string) => string | undefined;

export class LuaLoadError extends Error {
  readonly code = 'LUA_LOAD';
  constructor(message: string) {
    super(message);
    this.name = 'LuaLoadError';
  }
}

const INCLUDE = /^[ \t]*---?[ \t]*@include[ \t]+"([^"]+)"[ \t]*\r?$/;
const DEFINE = /^[ \t]*---?[ \t]*@define[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\r?$/;
const DIRECTIVE = /^[ \t]*---?[ \t]*@(include|define)\b/;

const fileOf = (name: string): string => `src/${name}.lua`;

/** A file's name, checked: a path under `src/` without `.lua` (`from`: the file that includes it). */
function nameOf(target: string, from?: string): string {
  const joined = posix.normalize(target);
  if (joined !== target || joined.startsWith('../') || joined.startsWith('/') || joined === '..' || joined.endsWith('.lua')) {
    throw new LuaLoadError(`${from === undefined ? 'a script' : fileOf(from)} names Lua file "${target}": give a path under src/ without .lua`);
  }
  return joined;
}

/** The text of script `name` with its includes and defines resolved. */
export function resolveLua(name: string, read: LuaReader, defines: LuaDefines = {}): string {
  for (const [k, v] of Object.entries(defines)) {
    if (!Number.isFinite(v)) throw new LuaLoadError(`Lua define ${k} is ${String(v)}: only finite numbers are defined`);
  }
  const top = nameOf(name);
  const text = read(top);
  if (text === undefined) throw new LuaLoadError(`no Lua file ${fileOf(top)}`);
  const included = new Set<string>([top]);

  const expand = (file: string, source: string, stack: readonly string[]): string => {
    const lines = source.split('\n');
    const out: string[] = [];
    lines.forEach((line, i) => {
      const where = `${fileOf(file)} line ${i + 1}`;
      const inc = INCLUDE.exec(line);
      if (inc) {
        const target = nameOf(inc[1] ?? '', file);
        if (stack.includes(target) || target === file) {
          throw new LuaLoadError(`${where}: include cycle ${[...stack, file, target].map(fileOf).join(' -> ')}`);
        }
        if (included.has(target)) return;
        const body = read(target);
        if (body === undefined) throw new LuaLoadError(`${where}: includes "${inc[1] ?? ''}", but there is no ${fileOf(target)}`);
        included.add(target);
        out.push(expand(target, body, [...stack, file]).replace(/\n$/, ''));
        return;
      }
      const def = DEFINE.exec(line);
      if (def) {
        const key = def[1] ?? '';
        const value = Object.hasOwn(defines, key) ? defines[key] : undefined;
        if (value === undefined) throw new LuaLoadError(`${where}: --@define ${key}, which the script's defines do not hold (${Object.keys(defines).join(', ') || 'none'})`);
        out.push(`local ${key} = ${String(value)}`);
        return;
      }
      if (DIRECTIVE.test(line)) throw new LuaLoadError(`${where}: malformed directive (--@include "path" or --@define NAME): ${line.trim()}`);
      out.push(line);
    });
    return out.join('\n');
  };
  return expand(top, text, []);
}

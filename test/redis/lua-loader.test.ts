/**
 * The `.lua` loader (src/redis/lua-loader.ts) on files held in memory: includes resolved recursively and once per
 * script, defines from the declared table only, and an error naming the file and line for a missing include, a
 * cycle, an undeclared define or a malformed directive.
 */
import { describe, expect, it } from 'vitest';
import { LuaLoadError, resolveLua } from '../../src/redis/lua-loader.js';

const files = (map: Record<string, string>) => (name: string) => map[name];

describe('resolveLua', () => {
  it('replaces an include line by the included file, recursively, each file once', () => {
    const read = files({
      'a/lua/main': '--@include "a/lua/includes/two"\n--@include "a/lua/includes/one"\nreturn one() + two()\n',
      'a/lua/includes/one': 'local function one() return 1 end\n',
      'a/lua/includes/two': '--- @include "a/lua/includes/one"\nlocal function two() return one() + 1 end\n',
    });
    expect(resolveLua('a/lua/main', read)).toBe('local function one() return 1 end\nlocal function two() return one() + 1 end\nreturn one() + two()\n');
  });

  it('names an include relative to src/, the same name a script has (an include of another room works alike)', () => {
    const read = files({ 'auth/lua/x': '--@include "redis/lua/includes/now"\nreturn now\n', 'redis/lua/includes/now': 'local now = 1\n' });
    expect(resolveLua('auth/lua/x', read)).toBe('local now = 1\nreturn now\n');
  });

  it('fails on a missing file, naming the including file and line', () => {
    expect(() => resolveLua('x/lua/none', files({}))).toThrow(/no Lua file src\/x\/lua\/none\.lua/);
    const read = files({ 'x/lua/main': 'local a = 1\n--@include "x/lua/includes/gone"\n' });
    expect(() => resolveLua('x/lua/main', read)).toThrow(LuaLoadError);
    expect(() => resolveLua('x/lua/main', read)).toThrow('src/x/lua/main.lua line 2: includes "x/lua/includes/gone", but there is no src/x/lua/includes/gone.lua');
  });

  it('fails on an include cycle, naming its files', () => {
    const read = files({ 'x/lua/a': '--@include "x/lua/b"\n', 'x/lua/b': '--@include "x/lua/c"\n', 'x/lua/c': '--@include "x/lua/a"\n' });
    expect(() => resolveLua('x/lua/a', read)).toThrow('src/x/lua/c.lua line 1: include cycle src/x/lua/a.lua -> src/x/lua/b.lua -> src/x/lua/c.lua -> src/x/lua/a.lua');
    expect(() => resolveLua('x/lua/s', files({ 'x/lua/s': '--@include "x/lua/s"\n' }))).toThrow(/include cycle/);
  });

  it('refuses a name that is not a path under src/ without .lua', () => {
    for (const bad of ['../etc/x', 'x/lua/a.lua', './x/lua/a', 'x//a', '/x/a']) {
      expect(() => resolveLua('x/lua/m', files({ 'x/lua/m': `--@include "${bad}"\n` })), bad).toThrow(LuaLoadError);
    }
  });

  it('turns a define line into a local from the declared table, and refuses one the table does not hold', () => {
    const read = files({ 'x/lua/m': '--@define LOAD\nreturn LOAD\n' });
    expect(resolveLua('x/lua/m', read, { LOAD: 8 })).toBe('local LOAD = 8\nreturn LOAD\n');
    expect(() => resolveLua('x/lua/m', read, { OTHER: 1 })).toThrow('src/x/lua/m.lua line 1: --@define LOAD, which the script\'s defines do not hold (OTHER)');
    expect(() => resolveLua('x/lua/m', read)).toThrow(/do not hold \(none\)/);
    expect(() => resolveLua('x/lua/m', read, { LOAD: Number.NaN })).toThrow(/only finite numbers/);
  });

  it('refuses a malformed directive rather than leaving it as a comment', () => {
    expect(() => resolveLua('x/lua/m', files({ 'x/lua/m': "--@include x/lua/y\n" }))).toThrow(/line 1: malformed directive/);
    expect(() => resolveLua('x/lua/m', files({ 'x/lua/m': '--@define load me\n' }))).toThrow(/malformed directive/);
  });

  it('leaves every other line as it is (comments included)', () => {
    const text = "-- KEYS: a. ARGV: b.\n-- @ in a comment is fine\nreturn redis.call('GET', KEYS[1])\n";
    expect(resolveLua('x/lua/m', files({ 'x/lua/m': text }))).toBe(text);
  });
});

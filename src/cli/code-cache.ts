/**
 * A CommonJS script run with a V8 code cache beside it (issue 14: `status` within 150 ms; decision 76). Node 20
 * has no compile cache for modules (`module.enableCompileCache` is 22+), but `vm.Script` takes V8's cached data:
 * the bytecode of the functions a run compiled, so the next start neither parses nor compiles them.
 *
 * The cache file is `<script>.cache`: a header (magic and the kind of run that wrote it, then a SHA-256 of the
 * script's text, the header and the cached data) and V8's data. A cache is used only when its digest matches this script and these bytes: V8 itself checks its
 * version, its flags and the source's length, but not the data's integrity (a damaged cache crashes the process
 * in V8's deserializer), nor whether a script of the same length has other text. A cache that is absent,
 * damaged, of another script or rejected by V8 (another Node, other V8 flags) is not used: the script is
 * compiled from its text as without a cache, and `save()` writes a new cache where the folder is writable
 * (written to a temporary file and renamed, so a reader never sees half of one). Where it is not, nothing is
 * written and every start compiles from the text. A cache written by the build's warm-up run (`warm-up`: it fails
 * at the connection, so it misses what the reads and the output compile) is used, and replaced by the first real
 * run's where the folder is writable.
 */
import { createHash } from 'node:crypto';
import { isAscii } from 'node:buffer';
import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Script } from 'node:vm';

/** 'csv8c2' then the kind of run: `w` the build's warm-up, `r` a real run; then a NUL. */
const MAGIC_BYTES = 8;
const magicOf = (kind: CacheKind): Buffer => Buffer.from(`csv8c2${kind === 'warm-up' ? 'w' : 'r'}\0`, 'latin1');
const MAGICS = { 'warm-up': magicOf('warm-up'), run: magicOf('run') } as const;
const DIGEST_BYTES = 32;
const HEADER_BYTES = MAGIC_BYTES + DIGEST_BYTES;

/** Which run wrote a cache: the build's warm-up (replaced by the first real run's where writable) or a real one. */
export type CacheKind = 'warm-up' | 'run';

/**
 * What became of the cache at load: `used` (accepted by V8), `absent`, `invalid` (not this script's, or
 * damaged: not given to V8), `rejected` (V8 refused it: another Node or other flags).
 */
export type CacheState = 'used' | 'absent' | 'invalid' | 'rejected';

export interface CachedScript {
  /** The script's `module.exports`. */
  readonly exports: unknown;
  readonly cache: CacheState;
  /** Which run wrote the cache loaded, when it was valid. */
  readonly cacheKind: CacheKind | undefined;
  /**
   * Writes the cache from the functions compiled so far (call it after the run, so the cache holds what the run
   * needed), unless the one used is as good: a real run's, or a warm-up's when this is a warm-up too. True when
   * written; false when not needed or not writable.
   */
  save(kind?: CacheKind): boolean;
}

const digestOf = (source: Buffer, magic: Buffer, data: Uint8Array): Buffer => createHash('sha256').update(source).update(magic).update(data).digest();

/** V8's data in `file` and the kind of run that wrote it, when the file is a cache of `source`; undefined when absent, null when invalid. */
function readCache(file: string, source: Buffer): { data: Buffer; kind: CacheKind } | undefined | null {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch {
    return undefined;
  }
  if (raw.length <= HEADER_BYTES) return null;
  const magic = raw.subarray(0, MAGIC_BYTES);
  const kind = (['run', 'warm-up'] as const).find((k) => MAGICS[k].equals(magic));
  if (kind === undefined) return null;
  const data = raw.subarray(HEADER_BYTES);
  return digestOf(source, magic, data).equals(raw.subarray(MAGIC_BYTES, HEADER_BYTES)) ? { data, kind } : null;
}

/**
 * Compiles and runs `file`, a CommonJS script (`require`, `module`, `exports`, `__filename` and `__dirname` as
 * Node gives them), with the cache at `cacheFile` when it is valid.
 */
export function loadCachedScript(file: string, cacheFile = `${file}.cache`): CachedScript {
  const source = readFileSync(file);
  const cached = readCache(cacheFile, source);
  // One byte a character: V8 keeps an ASCII text as a one-byte string without decoding it (the bundle's build
  // makes it ASCII); anything else is read as UTF-8.
  const text = source.toString(isAscii(source) ? 'latin1' : 'utf8');
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${text}\n})`, {
    filename: file,
    ...(cached ? { cachedData: cached.data } : {}),
  });
  const cache: CacheState = cached === undefined ? 'absent' : cached === null ? 'invalid' : script.cachedDataRejected === true ? 'rejected' : 'used';
  const module = { exports: {} as unknown };
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
  return {
    get exports() {
      return module.exports;
    },
    cache,
    cacheKind: cached?.kind,
    save(kind: CacheKind = 'run') {
      if (cache === 'used' && (cached?.kind === 'run' || kind === 'warm-up')) return false;
      const tmp = `${cacheFile}.${String(process.pid)}.tmp`;
      let fd: number;
      try {
        fd = openSync(tmp, 'wx', 0o644);
      } catch {
        return false; // not writable (an image's root-owned folder): start without a cache
      }
      try {
        const data = script.createCachedData();
        writeSync(fd, MAGICS[kind]);
        writeSync(fd, digestOf(source, MAGICS[kind], data));
        writeSync(fd, data);
        closeSync(fd);
        renameSync(tmp, cacheFile);
        return true;
      } catch {
        try {
          closeSync(fd);
        } catch {
          // closed already
        }
        try {
          unlinkSync(tmp);
        } catch {
          // gone already
        }
        return false;
      }
    },
  };
}

/**
 * Runs `main(argv)` of a CLI bundle built as a CommonJS script (dist/src/cli-status.cjs) with its code cache, and
 * saves the cache after the run unless the one used is as good (see `save`). Returns main's exit code.
 */
export async function runCachedMain(file: string, argv: string[], kind: CacheKind = 'run'): Promise<number> {
  const script = loadCachedScript(file);
  const code = await (script.exports as { main(argv: string[]): Promise<number> }).main(argv);
  script.save(kind);
  return code;
}

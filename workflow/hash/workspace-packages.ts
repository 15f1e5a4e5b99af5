// The repository's workspace packages by name, for resolving `workspace:` specifiers. Globs
// come from the root package.json `workspaces` (array, or `{ packages }`) and from
// `pnpm-workspace.yaml` `packages`; both are honoured when both exist.
import type { Dirent } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { InputError, messageOf } from '../../core/errors.ts';
import { HashErrorCode } from './diagnostics.ts';
import { comparePaths } from './encoding.ts';
import { errnoOf } from './repo-paths.ts';

/** Never searched for workspace packages. */
const SKIPPED_DIRS = new Set(['node_modules', '.git']);
const MAX_DIRS = 50_000;

export interface PackageJson {
  name?: unknown;
  dependencies?: unknown;
  devDependencies?: unknown;
  optionalDependencies?: unknown;
  peerDependencies?: unknown;
  workspaces?: unknown;
}

/** Parsed package.json, `undefined` when the file does not exist, InputError when it is not a JSON object. */
export async function readPackageJson(dirAbs: string, shownAs: string): Promise<PackageJson | undefined> {
  const file = path.join(dirAbs, 'package.json');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (errnoOf(error) === 'ENOENT' || errnoOf(error) === 'ENOTDIR') return undefined;
    throw new InputError(HashErrorCode.readFailed, `cannot read ${shownAs}: ${messageOf(error)}`, { cause: error, details: { path: shownAs } });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InputError(HashErrorCode.packageJsonInvalid, `${shownAs} is not valid JSON: ${messageOf(error)}`, { cause: error, details: { path: shownAs } });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InputError(HashErrorCode.packageJsonInvalid, `${shownAs} must hold a JSON object`, { details: { path: shownAs } });
  }
  return value as PackageJson;
}

function stringList(value: unknown, shownAs: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new InputError(HashErrorCode.packageJsonInvalid, `${shownAs} must be a list of glob strings`, { details: { path: shownAs } });
  }
  return value as string[];
}

async function workspaceGlobs(rootAbs: string): Promise<string[]> {
  const globs: string[] = [];
  const rootPackage = await readPackageJson(rootAbs, 'package.json');
  const workspaces = rootPackage?.workspaces;
  if (Array.isArray(workspaces)) globs.push(...stringList(workspaces, 'package.json workspaces'));
  else if (typeof workspaces === 'object' && workspaces !== null) {
    globs.push(...stringList((workspaces as { packages?: unknown }).packages, 'package.json workspaces.packages'));
  } else if (workspaces !== undefined) {
    throw new InputError(HashErrorCode.packageJsonInvalid, 'package.json workspaces must be a list of globs or { packages: [...] }', { details: { path: 'package.json' } });
  }
  let yamlText: string | undefined;
  try {
    yamlText = await readFile(path.join(rootAbs, 'pnpm-workspace.yaml'), 'utf8');
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw new InputError(HashErrorCode.readFailed, `cannot read pnpm-workspace.yaml: ${messageOf(error)}`, { cause: error });
  }
  if (yamlText !== undefined) {
    let doc: unknown;
    try {
      // yaml loads only for a pnpm workspace: it is a fifth of a compile's start-up otherwise.
      const { parse: parseYaml } = await import('yaml');
      doc = parseYaml(yamlText);
    } catch (error) {
      throw new InputError(HashErrorCode.packageJsonInvalid, `pnpm-workspace.yaml is not valid YAML: ${messageOf(error)}`, { cause: error, details: { path: 'pnpm-workspace.yaml' } });
    }
    if (doc !== null && doc !== undefined) {
      if (typeof doc !== 'object' || Array.isArray(doc)) {
        throw new InputError(HashErrorCode.packageJsonInvalid, 'pnpm-workspace.yaml must be a mapping with a `packages` list', { details: { path: 'pnpm-workspace.yaml' } });
      }
      globs.push(...stringList((doc as { packages?: unknown }).packages, 'pnpm-workspace.yaml packages'));
    }
  }
  return globs;
}

/** Map of workspace package name → absolute directory. Empty when the root declares no workspaces. */
export async function findWorkspacePackages(rootAbs: string): Promise<Map<string, string>> {
  const globs = (await workspaceGlobs(rootAbs)).map((g) => g.replace(/^\.\//, '').replace(/\/+$/, ''));
  const positive = globs.filter((g) => !g.startsWith('!') && g !== '');
  const negative = globs.filter((g) => g.startsWith('!')).map((g) => g.slice(1).replace(/^\.\//, ''));
  const byName = new Map<string, string>();
  if (positive.length === 0) return byName;
  const matches = picomatch(positive);
  const excluded = negative.length === 0 ? () => false : picomatch(negative);
  const bases = new Set(positive.map((g) => picomatch.scan(g).base));
  const candidates = new Set<string>();
  for (const base of bases) {
    if (base.split('/').includes('..')) {
      throw new InputError(HashErrorCode.siblingOutsideRepo, `workspace glob base ${base} leaves the repository`, { details: { path: base } });
    }
    for (const dir of await listDirectories(rootAbs, base)) if (matches(dir) && !excluded(dir)) candidates.add(dir);
  }
  for (const dir of [...candidates].sort(comparePaths)) {
    const pkg = await readPackageJson(path.join(rootAbs, dir), `${dir}/package.json`);
    if (pkg === undefined || typeof pkg.name !== 'string') continue;
    const previous = byName.get(pkg.name);
    if (previous !== undefined) {
      throw new InputError(
        HashErrorCode.workspaceAmbiguous,
        `two workspace packages are named ${pkg.name}: ${path.relative(rootAbs, previous)} and ${dir}; rename one`,
        { details: { name: pkg.name } },
      );
    }
    byName.set(pkg.name, path.join(rootAbs, dir));
  }
  return byName;
}

/** Directories under `base` (repo-relative POSIX), the base included, symlinks not entered. */
async function listDirectories(rootAbs: string, base: string): Promise<string[]> {
  const out: string[] = [];
  const stack = [base];
  while (stack.length > 0) {
    const rel = stack.pop()!;
    let entries: Dirent[];
    try {
      entries = await readdir(path.join(rootAbs, rel), { withFileTypes: true });
    } catch {
      continue;
    }
    if (rel !== '') out.push(rel);
    if (out.length > MAX_DIRS) {
      throw new InputError(HashErrorCode.tooManyFiles, `more than ${MAX_DIRS} directories searched for workspace packages: narrow the workspace globs`, {
        details: { limit: MAX_DIRS },
      });
    }
    for (const entry of entries) {
      if (entry.isDirectory() && !SKIPPED_DIRS.has(entry.name)) stack.push(rel === '' ? entry.name : `${rel}/${entry.name}`);
    }
  }
  return out;
}

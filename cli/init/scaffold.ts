// `svc init`: the files of a new `.svc/` directory. Nothing is written when any of them already
// exists, unless `force` is set; the caller then compiles so the lock exists from the start.
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConflictError, InputError, messageOf } from '../../core/errors.ts';
import { CI_FIXTURE, DEFAULT_SVCIGNORE, packageJson, SVC_GITIGNORE, tsconfigJson } from './templates.ts';

export interface ScaffoldOptions {
  root: string;
  /** Overwrite existing files. */
  force?: boolean;
  /** The version of svc to depend on in `.svc/package.json`. */
  svcVersion: string;
  /** The text of `.svc/workflows/ci.ts` (templates.ts `ciWorkflow`, from what the repository holds). */
  workflow: string;
}

export interface ScaffoldResult {
  /** Repo-relative POSIX paths. */
  created: string[];
  overwritten: string[];
}

export function scaffoldFiles(svcVersion: string, workflow: string): ReadonlyArray<{ path: string; text: string }> {
  return [
    { path: '.svc/.svcignore', text: DEFAULT_SVCIGNORE },
    { path: '.svc/.gitignore', text: SVC_GITIGNORE },
    { path: '.svc/workflows/ci.ts', text: workflow },
    { path: '.svc/tests/ci.fixture.ts', text: CI_FIXTURE },
    { path: '.svc/tsconfig.json', text: tsconfigJson() },
    { path: '.svc/package.json', text: packageJson(svcVersion) },
  ];
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    (error: { code?: string }) => error.code !== 'ENOENT',
  );
}

export async function scaffold(options: ScaffoldOptions): Promise<ScaffoldResult> {
  const files = scaffoldFiles(options.svcVersion, options.workflow);
  const present: string[] = [];
  for (const f of files) if (await exists(path.join(options.root, f.path))) present.push(f.path);
  if (present.length > 0 && options.force !== true) {
    throw new ConflictError('SVC_ERR_INIT_FILES_EXIST', `svc init would overwrite ${present.join(', ')}: keep them, or rerun with --force to replace them`, {
      details: { files: present },
    });
  }
  const result: ScaffoldResult = { created: [], overwritten: [] };
  for (const f of files) {
    const abs = path.join(options.root, f.path);
    try {
      await mkdir(path.dirname(abs), { recursive: true });
      // An unchanged file is left alone so its mtime (and editors watching it) stay quiet.
      const before = present.includes(f.path) ? await readFile(abs, 'utf8').catch(() => undefined) : undefined;
      if (before !== f.text) await writeFile(abs, f.text, 'utf8');
    } catch (error) {
      throw new InputError('SVC_ERR_INIT_WRITE_FAILED', `cannot write ${f.path}: ${messageOf(error)}`, { cause: error });
    }
    (present.includes(f.path) ? result.overwritten : result.created).push(f.path);
  }
  return result;
}

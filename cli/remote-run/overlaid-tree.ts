// The workflow tree the agents will run, for compiling: HEAD's `.svc/` plus the overlay's files
// under it, without the deleted ones, in a temporary directory. Compiling the working tree as it
// is would hash files that never reach the agents (git-ignored or local secret files under
// `.svc/`), and the agent would refuse the run as "lock file out of date". `.svc/node_modules`
// (installed locally, left out of the hash) is linked in so workflow imports resolve.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import * as tar from 'tar';
import { InputError, UnavailableError, messageOf } from '../../core/errors.ts';

export interface OverlaidTree {
  /** The project root inside the temporary tree (where `.svc/` is). */
  root: string;
  remove(): Promise<void>;
}

function posix(path: string): string {
  return path.split(sep).join('/');
}

async function extractHead(top: string, svcRel: string, into: string): Promise<void> {
  const git = spawn('git', ['archive', '--format=tar', 'HEAD', '--', svcRel], { cwd: top, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  git.stderr.on('data', (c: Buffer) => void (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    git.on('error', reject);
    git.on('close', resolve);
  });
  const extract = tar.x({ cwd: into, strict: true });
  git.stdout.pipe(extract);
  const extracted = new Promise<void>((resolve, reject) => {
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  const code = await exited;
  // HEAD without a `.svc/` (added in the working tree only): nothing to extract.
  if (code !== 0 && !/did not match any files/.test(stderr)) {
    throw new UnavailableError('SVC_ERR_GIT_FAILED', `git archive HEAD -- ${svcRel} failed: ${stderr.trim().split('\n')[0] ?? code}`);
  }
  if (code === 0) await extracted;
}

export async function overlaidTree(top: string, projectRoot: string, overlay: { files: readonly string[]; deleted: readonly string[] }): Promise<OverlaidTree> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-remote-tree-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    const projectRel = posix(relative(top, projectRoot));
    const svcRel = projectRel === '' ? '.svc' : `${projectRel}/.svc`;
    await extractHead(top, svcRel, dir);
    const inSvc = (p: string) => p.startsWith(`${svcRel}/`);
    for (const file of overlay.files.filter(inSvc)) {
      await mkdir(dirname(join(dir, file)), { recursive: true });
      await copyFile(join(top, file), join(dir, file));
    }
    for (const file of overlay.deleted.filter(inSvc)) await rm(join(dir, file), { force: true, recursive: true });
    const root = join(dir, projectRel);
    await mkdir(join(root, '.svc'), { recursive: true });
    const modules = join(projectRoot, '.svc', 'node_modules');
    if (existsSync(modules) && !existsSync(join(root, '.svc', 'node_modules'))) await symlink(modules, join(root, '.svc', 'node_modules'), 'dir');
    return { root, remove };
  } catch (error) {
    await remove();
    if (error instanceof UnavailableError) throw error;
    throw new InputError('SVC_ERR_REMOTE_RUN_OVERLAY', `cannot assemble the overlaid workflow tree: ${messageOf(error)}`);
  }
}

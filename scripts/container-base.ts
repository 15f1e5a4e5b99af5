// A local base image for the Containerfile where no image registry is reachable (this project's
// CI): a minimal Debian bookworm root file system made by debootstrap from a Debian mirror, with
// git and CA certificates (what the agent runs), plus this checkout's Node 24 and npm, imported
// with `podman import`. Passed to the build as `--build-arg BASE=<name>` (docs/containers.md).
//
//   node scripts/container-base.ts            # prints the image name; reuses it when present
//   node scripts/container-base.ts --rebuild
//
// Needs root (debootstrap), podman, and a Debian mirror (SVC_DEBIAN_MIRROR, default
// http://deb.debian.org/debian). The name carries the Node version: a new Node makes a new base.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

export const DEBIAN_SUITE = 'bookworm';

/** The base's name for the Node running this script. */
export function baseImageName(nodeVersion = process.versions.node): string {
  return `localhost/svc-base:${DEBIAN_SUITE}-node${nodeVersion}`;
}

export interface BaseImageResult {
  image: string;
  /** False when an image of that name already existed. */
  built: boolean;
  /** Wall time of debootstrap and of the import, when built. */
  debootstrapMs?: number;
  importMs?: number;
}

/** The npm package directory of the `npm` on PATH (pure JavaScript: it runs on any Node). */
async function npmPackageDir(): Promise<string> {
  const which = await execa('sh', ['-c', 'command -v npm']);
  let dir = dirname(realpathSync(which.stdout.trim()));
  for (let i = 0; i < 4; i += 1, dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'npm') return dir;
  }
  throw new Error(`cannot find the npm package behind ${which.stdout.trim()}`);
}

/** Builds (or finds) the base image. `workRoot` holds the root file system while it is made. */
export async function buildBaseImage(options: { rebuild?: boolean; workRoot?: string; mirror?: string } = {}): Promise<BaseImageResult> {
  const image = baseImageName();
  if (!options.rebuild && (await execa('podman', ['image', 'exists', image], { reject: false })).exitCode === 0) return { image, built: false };
  const work = mkdtempSync(join(options.workRoot ?? '/var/tmp', 'svc-base-'));
  try {
    const root = join(work, 'root');
    const mirror = options.mirror ?? process.env['SVC_DEBIAN_MIRROR'] ?? 'http://deb.debian.org/debian';
    let began = Date.now();
    // debootstrap and the chroot it calls live in the sbin directories, which a job's PATH (svc
    // tests svc runs this inside an agent's job) need not name.
    const path = [process.env['PATH'] ?? '/usr/bin:/bin', '/usr/local/sbin', '/usr/sbin', '/sbin'].join(':');
    const strap = await execa('debootstrap', ['--variant=minbase', '--include=git,ca-certificates', DEBIAN_SUITE, root, mirror], { reject: false, all: true, env: { PATH: path } });
    if (strap.exitCode === undefined) throw new Error(`cannot start debootstrap (${strap.shortMessage}): apt-get install debootstrap`);
    if (strap.exitCode !== 0) throw new Error(`debootstrap failed (exit ${strap.exitCode}):\n${strap.all.split('\n').slice(-20).join('\n')}`);
    const debootstrapMs = Date.now() - began;
    // What an image needs none of: downloaded packages, package lists, documentation.
    for (const dir of ['var/cache/apt/archives', 'var/lib/apt/lists', 'usr/share/doc', 'usr/share/man', 'usr/share/info']) {
      rmSync(join(root, dir), { recursive: true, force: true });
      mkdirSync(join(root, dir), { recursive: true });
    }
    // Node 24 and npm where the official node images keep them.
    cpSync(process.execPath, join(root, 'usr/local/bin/node'));
    cpSync(await npmPackageDir(), join(root, 'usr/local/lib/node_modules/npm'), { recursive: true });
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(root, 'usr/local/bin/npm'));
    symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(root, 'usr/local/bin/npx'));
    began = Date.now();
    const tarball = join(work, 'root.tar');
    await execa('tar', ['--numeric-owner', '-C', root, '-cf', tarball, '.']);
    await execa('podman', ['import', '--change', 'CMD ["/bin/bash"]', '--change', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', tarball, image]);
    return { image, built: true, debootstrapMs, importMs: Date.now() - began };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await buildBaseImage({ rebuild: process.argv.includes('--rebuild') });
  if (result.built) process.stderr.write(`debootstrap ${result.debootstrapMs} ms, import ${result.importMs} ms\n`);
  process.stdout.write(`${result.image}\n`);
}

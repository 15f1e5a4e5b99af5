// `firecracker` sandbox: one microVM per job, driven through the Firecracker API socket
// (PUT /machine-config, /boot-source, /drives/rootfs, /drives/workspace, /vsock, then /actions
// InstanceStart). The guest (guest.ts, started by the VM's init) connects back over vsock; the
// step runner's IPC and output travel as frames on that connection. The workspace goes in as a
// tarball drive; files the job writes stay in the VM (caches are saved from the host copy).
import { access, mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import * as tar from 'tar';
import { Type, type Static } from 'typebox';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import type { SandboxAvailability, SandboxExit, SandboxExtensionPoint, SandboxProcess, Workspace } from '../../../core/extension-points/sandbox.ts';
import { InputError, UnavailableError } from '../../../core/errors.ts';
import { killHostProcess, spawnHostProcess, type HostProcess } from '../shared/child.ts';
import { findExecutable } from '../shared/which.ts';
import { firecrackerPut } from './api.ts';
import { readFrames, writeFrame } from './frames.ts';

export const FirecrackerSandboxConfig = Type.Object(
  {
    /** The firecracker program and leading arguments (`--api-sock <path>` is appended). */
    command: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, default: ['firecracker'] }),
    kernelImage: Type.Optional(Type.String({ minLength: 1 })),
    rootfs: Type.Optional(Type.String({ minLength: 1 })),
    bootArgs: Type.String({ default: 'console=ttyS0 reboot=k panic=1 pci=off' }),
    vcpus: Type.Integer({ minimum: 1, maximum: 32, default: 2 }),
    memMib: Type.Integer({ minimum: 128, default: 1024 }),
    vsockPort: Type.Integer({ minimum: 1, maximum: 65535, default: 5252 }),
    /** Check /dev/kvm in `available()` (off only for the API test double). */
    requireKvm: Type.Boolean({ default: true }),
    bootTimeoutMs: Type.Integer({ minimum: 100, default: 30_000 }),
  },
  { additionalProperties: false },
);
export type FirecrackerSandboxConfig = Static<typeof FirecrackerSandboxConfig>;

interface Vm {
  vmm: HostProcess;
  dir: string;
  guest: Socket | undefined;
  server: Server;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** True once something accepts connections on the unix socket (the file appears at bind, before listen). */
function accepting(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new UnavailableError('SVC_ERR_SANDBOX_FIRECRACKER_BOOT', `${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export function createFirecrackerSandbox(config: FirecrackerSandboxConfig): SandboxExtensionPoint {
  const vms = new WeakMap<SandboxProcess, Vm>();
  return {
    async available(): Promise<SandboxAvailability> {
      if ((await findExecutable(config.command[0]!)) === null) return { available: false, missing: 'firecracker', message: `the firecracker program (${config.command[0]}) is not installed` };
      if (config.requireKvm && !(await exists('/dev/kvm'))) return { available: false, missing: '/dev/kvm', message: 'firecracker needs KVM and /dev/kvm is absent' };
      if (config.kernelImage === undefined || !(await exists(config.kernelImage))) return { available: false, missing: 'kernel image', message: 'no guest kernel image (SVC_AGENT_FIRECRACKER_KERNEL)' };
      if (config.rootfs === undefined || !(await exists(config.rootfs))) return { available: false, missing: 'rootfs', message: 'no guest root file system image (SVC_AGENT_FIRECRACKER_ROOTFS)' };
      return { available: true };
    },
    async prepareWorkspace(request): Promise<Workspace> {
      if (request.sourceDir === undefined) throw new InputError('SVC_ERR_SANDBOX_WORKSPACE', 'the firecracker sandbox needs the job source directory');
      const tmpDir = await mkdtemp(join(tmpdir(), 'svc-vm-'));
      return { dir: resolve(request.sourceDir), tmpDir };
    },
    async spawn(request): Promise<SandboxProcess> {
      const dir = request.workspace.tmpDir ?? (await mkdtemp(join(tmpdir(), 'svc-vm-')));
      const apiSock = join(dir, 'api.sock');
      const vsockUds = join(dir, 'v.sock');
      const workspaceTar = join(dir, 'workspace.tar');
      await tar.c({ file: workspaceTar, cwd: request.workspace.dir, portable: true }, ['.']);
      // The guest's connection to the host port arrives on `<uds>_<port>` (Firecracker's vsock convention).
      const server = createServer();
      let guestResolve!: (s: Socket) => void;
      const guestConnected = new Promise<Socket>((r) => (guestResolve = r));
      server.once('connection', (s) => guestResolve(s));
      await new Promise<void>((r, j) => server.listen(`${vsockUds}_${config.vsockPort}`, r).once('error', j));
      const vmm = spawnHostProcess({ argv: [...config.command, '--api-sock', apiSock], env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' }, cwd: dir });
      const vm: Vm = { vmm, dir, guest: undefined, server };
      const fail = async (error: unknown): Promise<never> => {
        await killHostProcess(vmm, 0);
        server.close();
        throw error;
      };
      try {
        await waitFor(() => accepting(apiSock), config.bootTimeoutMs, 'the firecracker API socket did not accept connections');
        await firecrackerPut(apiSock, '/machine-config', { vcpu_count: config.vcpus, mem_size_mib: config.memMib });
        await firecrackerPut(apiSock, '/boot-source', { kernel_image_path: config.kernelImage, boot_args: `${config.bootArgs} svc.port=${config.vsockPort}` });
        await firecrackerPut(apiSock, '/drives/rootfs', { drive_id: 'rootfs', path_on_host: config.rootfs, is_root_device: true, is_read_only: true });
        await firecrackerPut(apiSock, '/drives/workspace', { drive_id: 'workspace', path_on_host: workspaceTar, is_root_device: false, is_read_only: true });
        await firecrackerPut(apiSock, '/vsock', { guest_cid: 3, uds_path: vsockUds });
        await firecrackerPut(apiSock, '/actions', { action_type: 'InstanceStart' });
      } catch (error) {
        return fail(error);
      }
      let bootTimer: NodeJS.Timeout | undefined;
      const guest = await Promise.race([
        guestConnected,
        new Promise<never>((_, j) => (bootTimer = setTimeout(() => j(new UnavailableError('SVC_ERR_SANDBOX_FIRECRACKER_BOOT', `the guest did not connect within ${config.bootTimeoutMs} ms`)), config.bootTimeoutMs))),
      ]).catch(fail);
      clearTimeout(bootTimer);
      vm.guest = guest;
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      const listeners: Array<(m: unknown) => void> = [];
      const exited = new Promise<SandboxExit>((resolveExit) => {
        let done = false;
        const finish = (exit: SandboxExit) => {
          if (done) return;
          done = true;
          stdout.end();
          stderr.end();
          guest.destroy();
          server.close();
          void killHostProcess(vmm, 1_000).then(() => resolveExit(exit));
        };
        readFrames(guest, (frame) => {
          if (frame.t === 'out') (frame.s === 'stderr' ? stderr : stdout).write(Buffer.from(frame.d, 'base64'));
          else if (frame.t === 'ipc') for (const l of listeners) l(frame.m);
          else if (frame.t === 'exit') finish({ code: frame.code, signal: frame.signal });
        });
        guest.on('close', () => finish({ code: null, signal: 'SIGKILL' }));
        void vmm.exited.then((e) => finish({ code: e.code, signal: e.signal ?? 'SIGKILL' }));
      });
      writeFrame(guest, { t: 'start', argv: [...request.argv], env: { ...request.env }, cwd: request.cwd, ipc: request.ipc === true, workspaceTar });
      const proc: SandboxProcess = {
        pid: vmm.pid,
        stdout,
        stderr,
        stdin: null,
        exited,
        ...(request.ipc
          ? {
              send: (m: unknown) => writeFrame(guest, { t: 'ipc', m }),
              onMessage: (l: (m: unknown) => void) => void listeners.push(l),
            }
          : {}),
      };
      vms.set(proc, vm);
      return proc;
    },
    async kill(proc, options): Promise<SandboxExit> {
      const vm = vms.get(proc);
      if (vm === undefined) throw new InputError('SVC_ERR_SANDBOX_FOREIGN_PROCESS', 'this process was not started by the firecracker sandbox');
      if (options.graceMs > 0 && vm.guest !== undefined) {
        writeFrame(vm.guest, { t: 'signal', signal: 'SIGTERM' });
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([proc.exited, new Promise((r) => (timer = setTimeout(r, options.graceMs)))]);
        clearTimeout(timer);
      }
      // Stopping the VMM ends the VM and everything in it.
      await killHostProcess(vm.vmm, 0);
      return proc.exited;
    },
    async releaseWorkspace(workspace) {
      if (workspace.tmpDir !== undefined) await rm(workspace.tmpDir, { recursive: true, force: true });
    },
  };
}

export const firecrackerSandbox = definePlugin({
  id: 'firecracker',
  kind: 'sandbox',
  version: '0.9.0',
  kernelRange: '^0.9.0',
  description: 'One Firecracker microVM per job, driven through its API socket',
  configSchema: FirecrackerSandboxConfig,
  create: ({ config }) => createFirecrackerSandbox(config),
});

export default firecrackerSandbox;

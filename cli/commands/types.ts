// `svc types [--json]`: write `.svc/types/svc-sdk.d.ts` so editors resolve `svc/sdk` without an
// install (see cli/init/sdk-types.ts).
import { SvcCommand } from '../../core/cli/base-command.ts';
import { InputError } from '../../core/errors.ts';

export interface TypesOutput {
  path: string;
  target: string;
  written: boolean;
}

export default class Types extends SvcCommand {
  static override description = 'Write .svc/types/svc-sdk.d.ts so editors resolve svc/sdk without installing it';

  async run(): Promise<TypesOutput> {
    await this.parse(Types);
    const [{ findProjectRoot }, { writeSdkTypes }] = await Promise.all([import('../compiler/project-root.ts'), import('../init/sdk-types.ts')]);
    const { root, found } = findProjectRoot();
    if (!found) throw new InputError('SVC_ERR_COMPILE_SVC_DIR_MISSING', `no .svc/ directory in ${root} or above: run \`svc init\` first`);
    const result = await writeSdkTypes(root);
    if (!this.jsonEnabled()) this.log(`${result.path} ${result.written ? 'written' : 'unchanged'} (re-exports ${result.target})`);
    return result;
  }
}

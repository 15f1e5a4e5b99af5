// The kernel version plugins state a range against (`kernelRange`). Kept equal to package.json's
// version (a test checks it): reading package.json at run time breaks once compiled into dist/.
export const KERNEL_VERSION = '0.9.0';

/* SPDX-License-Identifier: GPL-2.0 */
/* The native platform's internal interface (platform.c <-> engine.c). */
#ifndef PCPLAB_NATIVE_H
#define PCPLAB_NATIVE_H

int native_frames_map(unsigned long nr_pfns);
void native_frames_unmap(void);

#endif

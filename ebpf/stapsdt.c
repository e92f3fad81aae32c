/* SPDX-License-Identifier: MIT */
/* Reading USDT (SystemTap SDT) notes, to tell a library without probes
 * apart from other failures and to find a probe's semaphore. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "drops_loader.h"

#define NT_STAPSDT 3

static int note_parse(Elf *elf, Elf_Data *data, const char *provider, const char *name,
		      struct evs_stapsdt_note *out)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;
	int asz = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;

	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *desc = (const char *)data->d_buf + desc_off;
		const char *end = desc + nh.n_descsz;
		const char *p, *q;
		unsigned long long a[3] = { 0, 0, 0 };

		if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 ||
		    memcmp((const char *)data->d_buf + name_off, "stapsdt", 8) ||
		    nh.n_descsz < (size_t)3 * asz + 3)
			continue;
		for (int i = 0; i < 3; i++) {
			if (asz == 8) {
				uint64_t v;

				memcpy(&v, desc + 8 * i, 8);
				a[i] = v;
			} else {
				uint32_t v;

				memcpy(&v, desc + 4 * i, 4);
				a[i] = v;
			}
		}
		/* provider\0name\0args\0, bounded by the descriptor */
		p = desc + 3 * asz;
		q = memchr(p, 0, end - p);
		if (!q || strcmp(p, provider))
			continue;
		p = q + 1;
		q = memchr(p, 0, end - p);
		if (!q || strcmp(p, name))
			continue;
		p = q + 1;
		q = memchr(p, 0, end - p);
		if (out) {
			size_t n = q ? (size_t)(q - p) : 0;

			if (n >= sizeof(out->args))
				n = sizeof(out->args) - 1;
			memcpy(out->args, p, n);
			out->args[n] = 0;
			out->sema = a[2];
		}
		return 0;
	}
	return -ENOENT;
}

int evs_stapsdt_find(const char *path, const char *provider, const char *name,
		     struct evs_stapsdt_note *note)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, err = -ENOENT;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx)) {
		err = -ENOEXEC;
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sname;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".note.stapsdt"))
			continue;
		data = elf_getdata(scn, NULL);
		if (data && note_parse(elf, data, provider, name, note) == 0) {
			err = 0;
			break;
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

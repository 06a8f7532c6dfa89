// kestrel: command-line front end. Parses flags and calls the library; no logic of its own.
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kestrel <train|val|detect|doctor|profile|scan|pack> [flags]\n");
    return 2;
  }
  std::fprintf(stderr, "kestrel: unknown command '%s'\n", argv[1]);
  return 2;
}

// Preloaded into a process (LD_PRELOAD) by runtime_test: once the file named
// by $STDOUT_WRITER_AFTER exists, writes "lost 0 1\n" on descriptor 1, as a
// library printing on stdout would.
#include <pthread.h>
#include <unistd.h>

#include <cstdlib>

namespace {

void* WriteWhenTold(void*) {
  const char* after = std::getenv("STDOUT_WRITER_AFTER");
  if (after == nullptr) return nullptr;
  for (int i = 0; i < 6000 && access(after, F_OK) != 0; ++i) usleep(10000);  // 60 s at most.
  static const char kLine[] = "lost 0 1\n";
  (void)!write(STDOUT_FILENO, kLine, sizeof(kLine) - 1);
  return nullptr;
}

__attribute__((constructor)) void Start() {
  pthread_t thread;
  if (pthread_create(&thread, nullptr, WriteWhenTold, nullptr) == 0) pthread_detach(thread);
}

}  // namespace

// The C++ oracle over files a Python check writes (tests/torch/check_torch_reference.py):
//   oracle_dump DIR   reads DIR/{dims,w1,s1,w2,s2,xq,xs,ids,tw,x}.bin and writes
//   DIR/y.bin (quantized_reference, BF16 bits) and DIR/{xq,xs}_oracle.bin
//   (mx::quantize_mxfp8 of x).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "oracle/moe_reference.hpp"
#include "oracle/mx_format.hpp"

using namespace moejit;

namespace {
template <class T>
std::vector<T> load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::vector<char> b((std::istreambuf_iterator<char>(f)), {});
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}
template <class T>
void save(const std::string& path, const std::vector<T>& v) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: oracle_dump DIR\n");
    return 2;
  }
  const std::string d = argv[1];
  const std::vector<int> dims = load<int>(d + "/dims.bin");  // E k H I B
  if (dims.size() != 5) return 2;
  const reference::MoeProblem p{dims[0], dims[1], dims[2], dims[3], 10.0f};
  const reference::CheckpointWeights w{load<std::uint8_t>(d + "/w1.bin"), load<std::uint8_t>(d + "/s1.bin"),
                                       load<std::uint8_t>(d + "/w2.bin"), load<std::uint8_t>(d + "/s2.bin")};
  const reference::Routing r{dims[4], load<std::int32_t>(d + "/ids.bin"), load<float>(d + "/tw.bin")};
  save(d + "/y.bin",
       reference::quantized_reference(p, w, load<std::uint8_t>(d + "/xq.bin"), load<std::uint8_t>(d + "/xs.bin"), r));
  const mx::MxMatrix q = mx::quantize_mxfp8(load<float>(d + "/x.bin"), dims[4], dims[2]);
  save(d + "/xq_oracle.bin", q.elements);
  save(d + "/xs_oracle.bin", q.scales);
  return 0;
}

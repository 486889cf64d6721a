// Fuzz target `image`: a prompt image's bytes as a client sends them, through what admission runs on
// them: `probe_image` (type and sides from the header) and `strip_image_metadata` (metadata out of
// the structure), under each of the four media types.
// Properties: a stripped image probes as the input did (type and sides: a viewer shows the same
// picture); stripping again changes nothing; the result grows by at most the orientation segment a
// JPEG may gain; a refusal leaves the bytes alone.
#include "fuzz_support.hpp"

#include "support/image.hpp"
#include "support/image_metadata.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto header = acp::support::probe_image(input);
  for (std::string_view type : {"image/png", "image/jpeg", "image/webp", "image/gif"}) {
    std::string bytes = input;
    if (!acp::support::strip_image_metadata(bytes, type)) {
      if (bytes != input) dsh_fuzz::violated("a refused image was changed");
      continue;
    }
    if (bytes.size() > input.size() + 36) dsh_fuzz::violated("stripping grew the image");
    if (header && header->media_type == type) {
      const auto after = acp::support::probe_image(bytes);
      if (!after || after->media_type != header->media_type || after->width != header->width ||
          after->height != header->height)
        dsh_fuzz::violated("the stripped image probes otherwise");
    }
    std::string again = bytes;
    if (!acp::support::strip_image_metadata(again, type) || again != bytes)
      dsh_fuzz::violated("stripping twice differs from stripping once");
  }
  return 0;
}

// What a picture says about where and by whom it was taken stays on the user's machine: a prompt's
// image loses its metadata before it is stored or sent to a model. The harness gets there by
// re-encoding every image it admits; without an image codec linked we take the same data out of
// the file's structure instead, byte for byte, leaving the pixels' encoding as it was:
//
//   JPEG  every APPn segment but JFIF (APP0), an ICC profile (APP2) and Adobe's (APP14), which
//         colours depend on: so Exif and its GPS, XMP, IPTC, MPF, maker notes, C2PA and thumbnails;
//         comments; whatever follows the end of the image (a phone's second pictures). An Exif
//         orientation other than 1 is kept, in an Exif segment of its own, so the image shows (and
//         measures) as before.
//   PNG   tEXt, zTXt, iTXt, eXIf, tIME and caBX chunks, and whatever follows IEND.
//   WebP  the EXIF and XMP chunks (their flags cleared in VP8X), and whatever follows the RIFF.
//   GIF   comments, application extensions other than looping (NETSCAPE2.0, ANIMEXTS1.0) and an ICC
//         profile, and whatever follows the trailer.
//
// A file with none of these is left byte for byte as it came.
#pragma once

#include <string>
#include <string_view>

namespace acp::support {

/// Removes the metadata of an image of `media_type` (one of the four probe_image() knows) in place.
/// Returns false, leaving `bytes` alone, when the file's structure is damaged: a segment, chunk or
/// block that runs past the end, or a byte where a marker must be (an image end cut short inside
/// the pixels is no damage).
bool strip_image_metadata(std::string& bytes, std::string_view media_type);

} // namespace acp::support

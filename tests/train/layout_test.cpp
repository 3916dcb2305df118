// SPDX-License-Identifier: Apache-2.0
// VMEM layout helpers: the packed image, the arena's placement and its errors.
#include "layout.h"

#include <gtest/gtest.h>

#include <string>

namespace tpu::train {
namespace {

TEST(Layout, PackPlacesColumnBlocksAndZeroPadding) {
  VmemArena arena(4, 10, 100);
  const VMat m = arena.matrix(5, 6);  // 2 blocks of pitch 8
  EXPECT_EQ(m.base, 10u);
  EXPECT_EQ(m.pitch, 8u);
  EXPECT_EQ(m.span(4), 16u);
  std::vector<float> values(30);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i + 1);
  const std::vector<float> image = pack(m, 4, values);
  ASSERT_EQ(image.size(), 64u);
  EXPECT_EQ(image[0 * 4 + 0], 1.0f);         // (0, 0)
  EXPECT_EQ(image[1 * 4 + 3], 10.0f);        // (1, 3)
  EXPECT_EQ(image[(8 + 2) * 4 + 1], 18.0f);  // (2, 5): block 1, row 2, lane 1
  EXPECT_EQ(image[(8 + 2) * 4 + 2], 0.0f);   // lane past cols
  EXPECT_EQ(image[6 * 4 + 0], 0.0f);         // row past rows
  EXPECT_EQ(unpack(m, 4, image), values);
  const VMat b = arena.row_vector(6);
  EXPECT_EQ(b.base, 26u);
  EXPECT_EQ(b.block(1), 27u);
  EXPECT_EQ(arena.used_end(), 28u);
}

TEST(Layout, ErrorsNameWhatWasWrong) {
  VmemArena arena(4, 0, 20);
  arena.rows(16);
  try {
    arena.rows(5);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("5 rows from row 16 do not fit VMEM (VmemRows = 20)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(arena.rows(0), std::invalid_argument);
  const VMat m{0, 2, 3, 4};
  EXPECT_THROW(pack(m, 4, std::vector<float>(5)), std::invalid_argument);
  EXPECT_THROW(unpack(m, 4, std::vector<float>(15)), std::invalid_argument);
}

}  // namespace
}  // namespace tpu::train

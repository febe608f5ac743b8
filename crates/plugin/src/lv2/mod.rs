//! LV2 hosting through lilv.

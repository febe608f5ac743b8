//! numpy arrays in and out: the checks an array passes before its memory is read as planar
//! `float32` audio, and a render's samples handed back as an array without a copy.

use numpy::ndarray::Array2;
use numpy::{
    dtype, IntoPyArray, PyArray2, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use crate::errors::AudioFormatError;

/// `audio` as a `(channels, frames)` C-contiguous `float32` array, or an error that says
/// what it is instead and how to make it so. Its samples are read in place (see `Chain::process`).
pub(crate) fn audio_in<'py>(audio: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray2<f32>>> {
    // The common case first, in one check (type, dtype and dimensions at once); the detailed
    // diagnosis only for an array that fails it.
    let Ok(typed) = audio.cast::<PyArray2<f32>>() else {
        return Err(diagnose(audio));
    };
    let (channels, frames) = (typed.shape()[0], typed.shape()[1]);
    if channels == 0 || channels > 64 {
        return Err(AudioFormatError::new_err(format!(
            "audio: {channels} channels; the first axis is channels (1 to 64), the second frames \
             (transpose a (frames, channels) array with audio.T.copy())"
        )));
    }
    if !typed.is_c_contiguous() {
        return Err(AudioFormatError::new_err(format!(
            "audio: the ({channels}, {frames}) array is not C-contiguous (a slice or a transpose \
             of another); make it so with numpy.ascontiguousarray(audio)"
        )));
    }
    Ok(typed.clone())
}

/// Why `audio` is not a 2-D `float32` array, and how to make it one.
fn diagnose(audio: &Bound<'_, PyAny>) -> PyErr {
    let py = audio.py();
    let Ok(array) = audio.cast::<PyUntypedArray>() else {
        let kind = audio
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        return AudioFormatError::new_err(format!(
            "audio: expected a numpy array of float32 shaped (channels, frames), got a {kind}"
        ));
    };
    if !array.dtype().is_equiv_to(&dtype::<f32>(py)) {
        return AudioFormatError::new_err(format!(
            "audio: dtype {} is not float32; convert with audio.astype(numpy.float32)",
            array.dtype()
        ));
    }
    AudioFormatError::new_err(format!(
        "audio: shape {:?} is not (channels, frames); a mono signal `x` is x[numpy.newaxis, :]",
        array.shape()
    ))
}

/// A new `(channels, frames)` array of silence, C-contiguous, for the caller to fill.
pub(crate) fn new_audio(
    py: Python<'_>,
    channels: usize,
    frames: usize,
) -> Bound<'_, PyArray2<f32>> {
    PyArray2::<f32>::zeros(py, [channels, frames], false)
}

/// Planar samples, channel after channel, as a `(channels, frames)` array that owns them.
pub(crate) fn audio_out(
    py: Python<'_>,
    samples: Vec<f32>,
    channels: usize,
    frames: usize,
) -> Bound<'_, PyArray2<f32>> {
    Array2::from_shape_vec((channels, frames), samples)
        .expect("the samples are channels times frames")
        .into_pyarray(py)
}
